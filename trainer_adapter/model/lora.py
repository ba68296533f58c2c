"""LoRA adapters on a model the trainer loads (peft), and the merged weights the inference servers load.

With ``[model.lora] enabled = true`` the trainer wraps the loaded model in peft's ``LoraConfig`` on the named
modules: the base weights are frozen, AdamW keeps state for the adapters only, and checkpoints (DCP) hold the
wrapped model's state, so a resumed run gets its adapters back. vLLM never sees an adapter: every export
merges ``W + (alpha / rank) · B A`` into the base weights under their Hugging Face names
(:func:`merged_state_dict`), and the server loads that folder as it loads any other version.

    [model.lora]
    enabled = true
    rank = 16
    alpha = 32
    target_modules = ["q_proj", "k_proj", "v_proj", "o_proj"]
"""

from __future__ import annotations

from typing import Any

import torch

from trainer_adapter.model.config import LoraSettings

_WRAPPER = "base_model.model."  # peft's prefix before the wrapped model's own names
_ADAPTER = "default"  # peft's name for the one adapter


def apply_lora(model: Any, settings: LoraSettings) -> Any:
    """``model`` wrapped with adapters on ``settings.target_modules`` (a peft ``PeftModel``)."""
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(r=settings.rank, lora_alpha=settings.alpha, lora_dropout=settings.dropout,
                        target_modules=list(settings.target_modules), bias="none", task_type="CAUSAL_LM")
    return get_peft_model(model, config)


def is_lora(model: Any) -> bool:
    """Whether ``model`` is a peft-wrapped model."""
    return hasattr(model, "peft_config")


def base_model(model: Any) -> Any:
    """The Hugging Face model inside a peft wrapper (``model`` itself when there is none)."""
    return model.get_base_model() if is_lora(model) else model


def lora_scaling(model: Any) -> float:
    """``alpha / rank`` of a peft model's one adapter."""
    config = model.peft_config[_ADAPTER]
    return float(config.lora_alpha) / float(config.r)


def merged_state_dict(state: dict[str, torch.Tensor], scaling: float) -> dict[str, torch.Tensor]:
    """A peft model's full state with each adapter merged into its base weight, under the base model's names.

    ``...q_proj.base_layer.weight`` + ``scaling`` · ``lora_B`` @ ``lora_A`` becomes ``...q_proj.weight``; the
    adapter tensors themselves are dropped. Computed in float32 whatever the state's dtype.
    """
    merged: dict[str, torch.Tensor] = {}
    for name, tensor in state.items():
        if ".lora_A." in name or ".lora_B." in name:
            continue
        plain = name.removeprefix(_WRAPPER)
        if ".base_layer." in plain:
            prefix = name.split(".base_layer.")[0]
            a = state.get(f"{prefix}.lora_A.{_ADAPTER}.weight")
            b = state.get(f"{prefix}.lora_B.{_ADAPTER}.weight")
            plain = plain.replace(".base_layer.", ".")
            if a is not None and b is not None and plain.endswith(".weight"):
                update = (b.float() @ a.float()) * scaling
                tensor = (tensor.float() + update).to(tensor.dtype)
        merged[plain] = tensor
    return merged


__all__ = ["apply_lora", "base_model", "is_lora", "lora_scaling", "merged_state_dict"]
