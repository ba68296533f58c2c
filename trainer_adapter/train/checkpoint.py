"""Checkpoints with torch distributed checkpoint (DCP): every rank writes its own shards.

A checkpoint is ``<root>/step_<n>/`` holding the model and optimizer shards and
``progress.json``. It is written under a temporary name and renamed by rank 0 once every
rank has finished, so a folder named ``step_<n>`` is always complete: a trainer killed
mid-write (even with ``kill -9``) leaves only a temporary folder, which is ignored and
cleared by the next save. The learning-rate schedule and the data order are functions of
the step, so the step is all the progress there is to keep.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from trainer_adapter.errors import CheckpointError
from trainer_adapter.run_folder import CHECKPOINT_MARKER as _PROGRESS
from trainer_adapter.run_folder import checkpoint_steps
from trainer_adapter.train.distributed import World


def save_checkpoint(
    root: Path, step: int, model: torch.nn.Module, optimizer: torch.optim.Optimizer, world: World, keep: int = 2,
    progress: dict[str, Any] | None = None,
) -> Path:
    """Write ``root/step_<step>`` from every rank; keep only the newest ``keep`` checkpoints."""
    final = root / f"step_{step}"
    tmp = root / f".step_{step}.tmp"
    if world.is_main:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    dist.barrier()
    model_state, optim_state = get_state_dict(model, optimizer)
    dcp.save({"model": model_state, "optimizer": optim_state}, checkpoint_id=str(tmp))
    dist.barrier()
    if world.is_main:
        (tmp / _PROGRESS).write_text(json.dumps({"step": step, **(progress or {})}))
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
        for old in checkpoint_steps(root)[:-keep] if keep > 0 else []:
            shutil.rmtree(root / f"step_{old}", ignore_errors=True)
    dist.barrier()
    return final


def load_checkpoint(path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """Load a checkpoint folder into the (already sharded) model and optimizer; returns its progress."""
    progress_file = path / _PROGRESS
    if not progress_file.is_file():
        raise CheckpointError(f"{path} is not a complete checkpoint (no {_PROGRESS})")
    model_state, optim_state = get_state_dict(model, optimizer)
    state: dict[str, Any] = {"model": model_state, "optimizer": optim_state}
    dcp.load(state, checkpoint_id=str(path))
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
    progress: dict[str, Any] = json.loads(progress_file.read_text())
    return progress


def latest_checkpoint(root: Path) -> Path | None:
    """The newest complete checkpoint under ``root``, if any."""
    steps = checkpoint_steps(root)
    return root / f"step_{steps[-1]}" if steps else None


__all__ = ["checkpoint_steps", "latest_checkpoint", "load_checkpoint", "save_checkpoint"]
