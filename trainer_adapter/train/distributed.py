"""The process group and FSDP2 sharding.

Launched by ``torchrun``, every rank finds its place in the environment (``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR``...). Run as a plain process (a test, a notebook) it
becomes a one-rank group on 127.0.0.1, so the same code path runs either way. CPUs use
gloo, GPUs NCCL.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from transformers import PreTrainedModel

from trainer_adapter.train.launch import free_port


@dataclass(frozen=True)
class World:
    """This process's place among the trainer ranks."""

    rank: int
    world_size: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_distributed() -> World:
    """Join (or, outside torchrun, create) the trainer's process group; idempotent."""
    use_cuda = torch.cuda.is_available()
    if not dist.is_initialized():
        backend = "nccl" if use_cuda else "gloo"
        if "RANK" in os.environ:
            dist.init_process_group(backend)
        else:
            dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    rank = dist.get_rank()
    if use_cuda:
        local = int(os.environ.get("LOCAL_RANK", rank % torch.cuda.device_count()))
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    else:
        device = torch.device("cpu")
    return World(rank, dist.get_world_size(), device)


def shard_model(model: PreTrainedModel, world: World) -> PreTrainedModel:
    """FSDP2: each decoder layer its own unit, then the root (embeddings, final norm, tied head).

    Sharding layer by layer lets a layer's parameters be gathered just before it runs and
    freed after; the root unit holds the rest, including the tied embedding/head weight,
    which must stay in one unit.
    """
    mesh = init_device_mesh(world.device.type, (world.world_size,))
    model.to(world.device)
    for layer in model.model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def all_reduce_sum(value: float, world: World) -> float:
    """The sum of ``value`` over all ranks."""
    tensor = torch.tensor([float(value)], dtype=torch.float64, device=world.device)
    dist.all_reduce(tensor)
    return float(tensor.item())


def close_distributed() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


__all__ = ["World", "all_reduce_sum", "close_distributed", "init_distributed", "shard_model"]
