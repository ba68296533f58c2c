"""Which backend, device and compute dtype the trainer ranks use: the one place where CPU and GPU part ways.

The choice is a pure function of what the machine has and what the config asks, so the GPU branch is
tested on machines without one (with a fake answer to "is CUDA there?").

- CUDA present: NCCL, one GPU per local rank, and ``precision = "auto"`` computes in bfloat16 (the
  weights, the optimizer and the gradient reduction stay float32: FSDP2's mixed precision). vLLM on
  the same GPU serves bfloat16, so trainer and inference see the same rounding.
- No CUDA: gloo on the CPU, and ``"auto"`` is float32 (the CPU vLLM serves float32 here, and the
  mismatch KL between them is then zero).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

# No torch here: configs import this module, and a config (or --help) should not have to load torch.
Precision = Literal["auto", "float32", "bfloat16"]
ComputeDtype = Literal["float32", "bfloat16"]
PRECISION_HELP = (
    "Compute dtype of the trainer's forward/backward: auto (bfloat16 on a GPU, float32 on CPU), "
    "float32, or bfloat16 (weights, optimizer and gradient reduction stay float32)."
)


@dataclass(frozen=True)
class DevicePlan:
    """The process group backend, the device type of the ranks, and the dtype they compute in."""

    backend: Literal["nccl", "gloo"]
    device_type: Literal["cuda", "cpu"]
    compute_dtype: ComputeDtype  # a torch dtype's name (``getattr(torch, name)``)


def plan_devices(cuda_available: bool, precision: Precision = "auto") -> DevicePlan:
    """The plan for a machine that has (``cuda_available``) or lacks a CUDA device, under ``precision``."""
    if precision not in get_args(Precision):
        raise ValueError(f"precision must be one of {', '.join(get_args(Precision))}, not {precision!r}")
    dtype: ComputeDtype = ("bfloat16" if cuda_available else "float32") if precision == "auto" else precision
    if cuda_available:
        return DevicePlan("nccl", "cuda", dtype)
    return DevicePlan("gloo", "cpu", dtype)


__all__ = ["PRECISION_HELP", "ComputeDtype", "DevicePlan", "Precision", "plan_devices"]
