"""When the trainer wraps its model in FSDP2, and which AdamW path each kind of parameter takes."""

from __future__ import annotations

import torch
from torch.distributed.fsdp import FSDPModule

from trainer_adapter.model.config import ModelConfig
from trainer_adapter.model.tiny import load_model
from trainer_adapter.train.config import OptimizerConfig
from trainer_adapter.train.distributed import World, init_distributed, is_sharded, shard_model
from trainer_adapter.train.optimizer import adamw_foreach, build_optimizer


def _world(compute_dtype: torch.dtype, world_size: int | None = None) -> World:
    world = init_distributed()
    return World(world.rank, world_size or world.world_size, world.device, compute_dtype)


def test_one_float32_rank_keeps_a_plain_module_and_the_multi_tensor_adamw() -> None:
    model, _ = load_model(ModelConfig(num_layers=1, seed=4))
    world = _world(torch.float32)
    assert not is_sharded(world)
    assert shard_model(model, world) is model
    assert not isinstance(model, FSDPModule)
    assert not any(hasattr(p, "full_tensor") for p in model.parameters())
    optimizer = build_optimizer(model, OptimizerConfig())
    assert optimizer.defaults["foreach"] is None  # PyTorch picks its fast path for plain tensors


def test_a_cast_compute_dtype_or_several_ranks_shard() -> None:
    assert is_sharded(_world(torch.float32, world_size=2))
    model, _ = load_model(ModelConfig(num_layers=1, seed=4))
    shard_model(model, _world(torch.bfloat16))
    assert isinstance(model, FSDPModule)
    assert all(hasattr(p, "full_tensor") for p in model.parameters())  # DTensors
    assert build_optimizer(model, OptimizerConfig()).defaults["foreach"] is False


def test_dtensors_take_the_multi_tensor_adamw_on_cuda_only() -> None:
    assert adamw_foreach(sharded=True, device_type="cuda") is True  # measured on an H200: docs/gpu.md
    assert adamw_foreach(sharded=True, device_type="cpu") is False
    assert adamw_foreach(sharded=False, device_type="cuda") is None
