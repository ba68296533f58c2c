"""AdamW, its learning-rate schedule and gradient clipping.

The schedule is a function of the step (linear warm-up, then constant or cosine decay),
so a resumed run needs no scheduler state.
"""

from __future__ import annotations

import math

import torch

from trainer_adapter.train.config import OptimizerConfig


def build_optimizer(model: torch.nn.Module, config: OptimizerConfig) -> torch.optim.AdamW:
    """AdamW over the model's parameters (sharded ones included)."""
    params = [p for p in model.parameters() if p.requires_grad]  # LoRA freezes the base weights: no state for them
    sharded = any(hasattr(p, "full_tensor") for p in params)
    device_type = params[0].device.type if params else "cpu"
    return torch.optim.AdamW(
        params, lr=config.lr, betas=config.betas, weight_decay=config.weight_decay,
        foreach=adamw_foreach(sharded, device_type),
    )


def adamw_foreach(sharded: bool, device_type: str) -> bool | None:
    """AdamW's ``foreach`` for the model's parameters: None lets PyTorch pick its multi-tensor path for plain
    tensors; FSDP2's DTensors take it explicitly on CUDA, where it made the 104M model's AdamW step 12x faster on
    an H200 (5.5 against 64 ms, ``bench/trainer_step.py``, docs/gpu.md), and the per-parameter path elsewhere,
    which works on every backend."""
    if not sharded:
        return None
    return device_type == "cuda"


def lr_at(step: int, total_steps: int, config: OptimizerConfig) -> float:
    """The learning rate of optimizer step ``step`` (0-based) in a run of ``total_steps``."""
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    if config.schedule == "constant":
        return config.lr
    span = max(total_steps - config.warmup_steps, 1)
    progress = min((step - config.warmup_steps) / span, 1.0)
    floor = config.lr * config.min_lr_ratio
    return floor + (config.lr - floor) * 0.5 * (1 + math.cos(math.pi * progress))


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def clip_gradients(model: torch.nn.Module, max_norm: float) -> float:
    """Clip to ``max_norm`` and return the norm before clipping (over all ranks' shards)."""
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    full = getattr(norm, "full_tensor", None)  # a DTensor under FSDP2
    return float(full() if full is not None else norm)


__all__ = ["adamw_foreach", "build_optimizer", "clip_gradients", "lr_at", "set_lr"]
