"""The RL trainer process: wait for a step's batch, take one optimizer step with the policy loss, publish weights.

Step n (0-based) trains the weights of version n on ``rollouts/step_<n>/rank_<r>.json``
(written by the orchestrator, see :mod:`trainer_adapter.transport`) and produces version
n+1, exported to ``weights/step_<n+1>/`` (a Hugging Face folder renamed into place, which
the orchestrator hands to the inference servers' ``/update_weights``). The trainer never
waits for rollouts beyond the batch it needs: how far the orchestrator may run ahead is
the orchestrator's ``max_async_level``. ``time/wait_for_batch`` is the trainer's idle time.
With ``loss.kl_coef > 0`` a second, frozen copy of ``model`` (the run's initial weights, also
after a resume) is the reference of the KL penalty. Checkpoints (every ``checkpoint.every`` steps)
keep their step's exported weights beside them, whatever ``keep_weights`` says: ``vf-train rl
--resume`` starts the inference servers on them. Started by ``vf-train rl``, each rank exits when
the launcher is gone (:func:`trainer_adapter.lifeline.watch_launcher`).

Run under torchrun (one process per rank)::

    torchrun --nproc-per-node 2 -m trainer_adapter.train.rl rl_trainer.toml
"""

from __future__ import annotations

import resource
import shutil
import time
from collections.abc import Collection
from pathlib import Path

import torch
import torch.distributed as dist
from pydantic import BaseModel, ConfigDict, Field
from transformers import PreTrainedModel

from trainer_adapter.lifeline import watch_launcher
from trainer_adapter.loss.config import LossConfig
from trainer_adapter.model.config import LoraSettings, ModelConfig
from trainer_adapter.model.tiny import load_model
from trainer_adapter.orchestrator.packing import MicroBatch
from trainer_adapter.run_folder import checkpoint_steps, numbered_steps
from trainer_adapter.train.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from trainer_adapter.train.config import CheckpointConfig, OptimizerConfig
from trainer_adapter.train.device_plan import PRECISION_HELP, Precision
from trainer_adapter.train.distributed import World, all_reduce_sum, init_distributed, shard_model
from trainer_adapter.train.entry import log_step, run_rank
from trainer_adapter.train.export import export_weights
from trainer_adapter.train.metrics import trainer_metrics
from trainer_adapter.train.optimizer import build_optimizer, clip_gradients, lr_at, set_lr
from trainer_adapter.train.rl_step import rl_backward, step_normalizer
from trainer_adapter.transport import remove_steps_before, wait_for_step
from verifiers.metrics_server import MetricsConfig, serve_configured


class RLTrainerConfig(BaseModel):
    """The RL trainer: model, optimizer, loss, checkpoints, length, and where batches and weights live."""

    model_config = ConfigDict(extra="forbid")

    model: ModelConfig = Field(default_factory=ModelConfig, description="The model to train.")
    optimizer: OptimizerConfig = Field(default_factory=OptimizerConfig, description="AdamW and its schedule.")
    loss: LossConfig = Field(default_factory=LossConfig, description="The policy loss and its bounds.")
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig, description="Checkpoints and resume.")
    max_steps: int = Field(20, gt=0, description="Optimizer steps in the run.")
    output_dir: Path = Field(Path("outputs/rl"), description="Shared run folder: batches in, weights and metrics out.")
    batch_timeout_s: float = Field(600.0, gt=0, description="Give up when a step's batch has not come after this.")
    keep_weights: int = Field(4, ge=1, description="Newest exported weight folders kept (older ones are deleted).")
    num_processes: int = Field(1, gt=0, description="Trainer ranks on this machine (torchrun --nproc-per-node).")
    threads_per_process: int = Field(1, gt=0, description="CPU threads per rank.")
    precision: Precision = Field("auto", description=PRECISION_HELP)
    resume_step: int | None = Field(
        None, gt=0, description="Load exactly checkpoints/step_<n> (vf-train rl --resume sets it, so that trainer and "
        "orchestrator continue from the same step); unset: the newest checkpoint when checkpoint.resume is true.",
    )
    metrics: MetricsConfig = Field(
        default_factory=MetricsConfig, description="Rank 0's Prometheus endpoint; off unless metrics.port is set.")


def run_rl_trainer(config: RLTrainerConfig) -> Path:
    """Train ``max_steps`` steps from the batches in ``output_dir``; returns the last weights folder."""
    watch_launcher()
    world = init_distributed(config.precision)
    if world.is_main:
        serve_configured(config.metrics)  # lives as long as the process, so the last step is still scraped
    torch.set_num_threads(config.threads_per_process)
    model, tokenizer = load_model(config.model)
    shard_model(model, world)
    reference = _load_reference(config.model, world) if config.loss.kl_coef > 0 else None
    optimizer = build_optimizer(model, config.optimizer)
    root = config.output_dir
    checkpoints = root / "checkpoints"
    if config.resume_step is not None:
        latest: Path | None = checkpoints / f"step_{config.resume_step}"
    else:
        latest = latest_checkpoint(checkpoints) if config.checkpoint.resume else None
    start = int(load_checkpoint(latest, model, optimizer)["step"]) if latest else 0
    if latest and world.is_main:
        print(f"resumed from {latest} (step {start})", flush=True)
    weights = root / "weights" / f"step_{start}"
    for step in range(start, config.max_steps):
        started = time.perf_counter()
        micro_batches = wait_for_step(root, step, world.rank, config.batch_timeout_s)
        waited = time.perf_counter() - started
        step_count = step_normalizer(micro_batches, config.loss, world)
        metrics = rl_backward(model, micro_batches, step_count, config.loss, world, reference)
        grad_norm = clip_gradients(model, config.optimizer.max_grad_norm)
        lr = lr_at(step, config.max_steps, config.optimizer)
        set_lr(optimizer, lr)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        exporting = time.perf_counter()
        weights = export_weights(model, tokenizer, root / "weights" / f"step_{step + 1}", world)
        exported = time.perf_counter() - exporting
        lag = _max_off_policy_steps(step, micro_batches, world)
        # every position the step ran forward/backward on (prompts too, a shared one once), for its tokens/s
        tokens = int(all_reduce_sum(sum(mb.positions for mb in micro_batches), world))
        if world.is_main:
            remove_steps_before(root, step + 1)
            _prune(root / "weights", config.keep_weights, keep_also=checkpoint_steps(checkpoints))
            elapsed = time.perf_counter() - started
            line = {"step": step + 1, **metrics, "grad_norm": grad_norm, "lr": lr, "off_policy_max": lag,
                    "tokens": tokens, "time/wait_for_batch": waited, "time/export": exported,
                    "time/step": elapsed, "memory/peak_rss_mb": _peak_rss_mb()}
            log_step(root / "trainer_metrics.jsonl", line)
            trainer_metrics().record_step(step + 1, tokens, metrics["loss"], grad_norm, elapsed, elapsed - waited,
                                          mismatch_kl=metrics.get("mismatch_kl"))
        done = step + 1
        if config.checkpoint.every and done % config.checkpoint.every == 0:
            save_checkpoint(checkpoints, done, model, optimizer, world, config.checkpoint.keep)
    return weights


def _peak_rss_mb() -> float:
    """This rank's peak resident memory so far, in MiB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _load_reference(config: ModelConfig, world: World) -> PreTrainedModel:
    """A frozen copy of the initial model, sharded like the trained one (so it costs each rank a share, not a copy).

    ``config`` names the initial weights, never a checkpoint, so a resumed run keeps its reference.
    """
    reference, _ = load_model(config.model_copy(update={"lora": LoraSettings()}))  # the base model, no adapters
    reference.requires_grad_(False)
    reference.eval()  # deterministic; the policy runs in training mode, which is the same for dropout-free models
    return shard_model(reference, world)


def _max_off_policy_steps(step: int, micro_batches: list[MicroBatch], world: World) -> int:
    """How far the oldest sample of the step (on any rank) lags the weights it trained."""
    versions = [v for mb in micro_batches for v in mb.policy_versions]
    lag = torch.tensor([step - min(versions) if versions else 0], device=world.device)
    dist.all_reduce(lag, op=dist.ReduceOp.MAX)
    return int(lag.item())


def _prune(folder: Path, keep: int, keep_also: Collection[int] = ()) -> None:
    """Delete all but the newest ``keep`` weight folders, and the checkpointed steps' (``keep_also``)."""
    for old in numbered_steps(folder)[:-keep]:
        if old not in keep_also:
            shutil.rmtree(folder / f"step_{old}", ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    """``python -m trainer_adapter.train.rl CONFIG [KEY=VALUE ...]`` (one rank; torchrun starts several)."""
    run_rank("trainer_adapter.train.rl", RLTrainerConfig, run_rl_trainer, argv)


if __name__ == "__main__":
    main()


__all__ = ["RLTrainerConfig", "main", "run_rl_trainer"]
