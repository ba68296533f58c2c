"""Weight export: the trained weights as a Hugging Face safetensors folder, made visible atomically.

Rank 0 gathers the full (unsharded) state dict, writes ``model.safetensors``, the config,
the generation config and the tokenizer into a temporary folder, then renames it to its
final name, so an inference server never sees a half-written folder. With tied
embeddings the output head is the embedding matrix: safetensors refuses two names for
one tensor, and loaders re-tie it from the config, so only the embedding is written.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import cast

import torch
import torch.distributed as dist
from safetensors.torch import save_file
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from transformers import GenerationConfig, PreTrainedModel, PreTrainedTokenizerBase

from trainer_adapter.model.lora import base_model, is_lora, lora_scaling, merged_state_dict
from trainer_adapter.train.distributed import World

WEIGHTS_FILE = "model.safetensors"


def full_state_dict(model: PreTrainedModel) -> dict[str, torch.Tensor]:
    """The unsharded weights on CPU (every rank takes part; only rank 0 gets them back)."""
    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    # a model's state holds tensors only (the declared value type also covers an optimizer's numbers and lists)
    return cast(dict[str, torch.Tensor], get_model_state_dict(model, options=options))


def export_weights(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, dest: Path, world: World) -> Path:
    """Write ``dest`` as a Hugging Face model folder; a collective (every rank must call it)."""
    state = full_state_dict(model)
    if world.is_main:
        if is_lora(model):  # the servers load plain weights: each adapter merged into its base weight
            state = merged_state_dict(state, lora_scaling(model))
        write_hf_folder(state, base_model(model), tokenizer, dest)
    dist.barrier()
    return dest


def write_hf_folder(
    state: dict[str, torch.Tensor], model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, dest: Path
) -> Path:
    """Write weights, config, generation config and tokenizer to ``dest`` through a temporary folder."""
    tmp = dest.parent / f".{dest.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    tensors = {name: t.detach().to("cpu").contiguous().clone() for name, t in state.items()}
    if model.config.tie_word_embeddings:
        tensors.pop("lm_head.weight", None)
    save_file(tensors, str(tmp / WEIGHTS_FILE), metadata={"format": "pt"})
    model.config.save_pretrained(tmp)
    GenerationConfig(
        eos_token_id=model.config.eos_token_id, pad_token_id=model.config.pad_token_id, bos_token_id=None
    ).save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    _replace_dir(tmp, dest)
    return dest


def _replace_dir(src: Path, dest: Path) -> None:
    """Rename ``src`` to ``dest``; an existing ``dest`` is moved aside first and removed after."""
    if not dest.exists():
        src.rename(dest)
        return
    old = dest.parent / f".{dest.name}.old-{os.getpid()}"
    dest.rename(old)
    src.rename(dest)
    shutil.rmtree(old, ignore_errors=True)


__all__ = ["WEIGHTS_FILE", "export_weights", "full_state_dict", "write_hf_folder"]
