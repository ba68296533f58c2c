"""The CPU/GPU choice of the trainer ranks: backend, device and compute dtype, with CUDA faked either way."""

from __future__ import annotations

import pytest
import torch

from trainer_adapter.model.config import ModelConfig
from trainer_adapter.model.tiny import load_model
from trainer_adapter.train.device_plan import DevicePlan, plan_devices
from trainer_adapter.train.distributed import World, init_distributed, shard_model


@pytest.mark.parametrize(
    ("cuda", "precision", "expected"),
    [
        (True, "auto", DevicePlan("nccl", "cuda", "bfloat16")),  # a GPU: NCCL and bfloat16 by default
        (False, "auto", DevicePlan("gloo", "cpu", "float32")),  # CPU: gloo, float32 like the CPU vLLM
        (True, "float32", DevicePlan("nccl", "cuda", "float32")),
        (False, "bfloat16", DevicePlan("gloo", "cpu", "bfloat16")),
    ],
)
def test_the_plan_follows_the_machine_and_the_config(cuda: bool, precision: str, expected: DevicePlan) -> None:
    assert plan_devices(cuda, precision) == expected  # type: ignore[arg-type]


def test_an_unknown_precision_is_refused() -> None:
    with pytest.raises(ValueError, match="precision must be one of auto, float32, bfloat16"):
        plan_devices(True, "fp8")  # type: ignore[arg-type]


def test_this_machine_gets_the_cpu_plan() -> None:
    world = init_distributed()
    assert (world.device.type, world.compute_dtype) == ("cpu", torch.float32)
    assert init_distributed("bfloat16").compute_dtype == torch.bfloat16


def test_bfloat16_computes_in_bfloat16_and_keeps_float32_weights_and_gradients() -> None:
    world = init_distributed()
    model, _ = load_model(ModelConfig(num_layers=1, seed=4))
    shard_model(model, World(world.rank, world.world_size, world.device, torch.bfloat16))
    ids = torch.tensor([[3, 5, 7, 9]])
    logits = model(input_ids=ids).logits
    assert logits.dtype == torch.bfloat16
    logits.float().logsumexp(-1).sum().backward()
    params = list(model.parameters())
    assert all(p.dtype == torch.float32 for p in params)
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in params)
