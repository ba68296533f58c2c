"""The SFT trainer's configs: the run, AdamW and its schedule, checkpoints. Importable without torch: ``vf-train``
builds its options from them, and a config is validated before any trainer process starts."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from trainer_adapter.model.config import ModelConfig
from trainer_adapter.train.device_plan import PRECISION_HELP, Precision
from trainer_adapter.train.sft_data import SFTDataConfig
from verifiers.metrics_server import MetricsConfig


class OptimizerConfig(BaseModel):
    """AdamW and its schedule."""

    model_config = ConfigDict(extra="forbid")

    lr: float = Field(2e-3, gt=0, description="Peak learning rate (2e-3 suits the tiny model).")
    betas: tuple[float, float] = Field((0.9, 0.95), description="AdamW's moment decay rates.")
    weight_decay: float = Field(0.0, ge=0, description="AdamW's decoupled weight decay.")
    max_grad_norm: float = Field(1.0, gt=0, description="Gradients are clipped to this global L2 norm.")
    warmup_steps: int = Field(10, ge=0, description="Steps of linear warm-up from 0 to lr.")
    schedule: Literal["constant", "cosine"] = Field("cosine", description="After warm-up: keep lr, or cosine-decay it.")
    min_lr_ratio: float = Field(0.1, ge=0, le=1, description="Cosine decay ends at lr × this.")


class CheckpointConfig(BaseModel):
    """When to write checkpoints, how many to keep, and whether to resume from them."""

    model_config = ConfigDict(extra="forbid")

    every: int = Field(0, ge=0, description="Write a checkpoint every this many steps (0: only at the end).")
    keep: int = Field(2, ge=1, description="Newest checkpoints kept on disk.")
    resume: bool = Field(True, description="Continue from the newest checkpoint in the output folder, if any.")


class SFTConfig(BaseModel):
    """An SFT run: model, data, optimizer, checkpoints, length and output folder."""

    model_config = ConfigDict(extra="forbid")

    model: ModelConfig = Field(default_factory=ModelConfig, description="The model to fine-tune.")
    data: SFTDataConfig = Field(description="The prompt/completion data.")
    optimizer: OptimizerConfig = Field(default_factory=OptimizerConfig, description="AdamW and its schedule.")
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig, description="Checkpoints and resume.")
    max_steps: int = Field(300, gt=0, description="Optimizer steps in the run.")
    output_dir: Path = Field(Path("outputs/sft"), description="Folder for metrics, checkpoints and weights.")
    log_every: int = Field(10, gt=0, description="Write a metrics line every this many steps.")
    num_processes: int = Field(1, gt=0, description="Trainer ranks on this machine (torchrun --nproc-per-node).")
    threads_per_process: int | None = Field(
        None, gt=0, description="CPU threads per rank; unset: the machine's cores shared among the ranks (vf-train "
        "starts ranks with OMP_WAIT_POLICY=PASSIVE: spinning idle threads would crawl on a busy machine).")
    stop_at_loss: float | None = Field(
        None, gt=0, description="Stop early once the mean training loss of the last stop_window steps is at most "
        "this (a warm start of a given quality rather than a given length); unset: run max_steps.",
    )
    stop_window: int = Field(25, gt=0, description="Steps the stop_at_loss mean is taken over.")
    precision: Precision = Field("auto", description=PRECISION_HELP)
    metrics: MetricsConfig = Field(
        default_factory=MetricsConfig, description="Rank 0's Prometheus endpoint; off unless metrics.port is set.")


__all__ = ["CheckpointConfig", "OptimizerConfig", "SFTConfig"]
