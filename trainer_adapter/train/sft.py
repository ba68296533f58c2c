"""Supervised fine-tuning on prompt/completion data, with the RL trainer's stack.

Same model loading, FSDP2 sharding, micro-batch packing, AdamW, clipping, checkpoints and
weight export as RL; the loss is the mean negative log-likelihood of the completion
tokens (token-level: every trainable token of the step weighs the same). Every rank
packs the whole step's batch the same way and takes its share, so the token count that
normalises the loss is known everywhere without communication.

Run under torchrun (``vf-train sft CONFIG`` does it)::

    torchrun --standalone --nproc-per-node 2 -m trainer_adapter.train.sft sft.toml optimizer.lr=1e-3

Output folder: ``metrics.jsonl`` (one line per logged step), ``checkpoints/step_<n>/``,
``weights/step_<n>/`` (a Hugging Face folder; the final one is written at the end).
"""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path
from typing import Any

import torch

from trainer_adapter.model.tiny import load_model
from trainer_adapter.orchestrator.packing import Sample, distribute, pack
from trainer_adapter.train.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from trainer_adapter.train.config import CheckpointConfig, SFTConfig
from trainer_adapter.train.distributed import World, all_reduce_sum, init_distributed, shard_model
from trainer_adapter.train.entry import log_step, run_rank
from trainer_adapter.train.export import export_weights
from trainer_adapter.train.forward import MicroBatchTensors, sync_gradients_after, token_logprobs, trainable_tokens
from trainer_adapter.train.launch import default_threads
from trainer_adapter.train.metrics import trainer_metrics
from trainer_adapter.train.optimizer import build_optimizer, clip_gradients, lr_at, set_lr
from trainer_adapter.train.sft_data import load_rows, step_samples, tokenize
from verifiers.metrics_server import serve_configured


def run_sft(config: SFTConfig) -> Path:
    """Train; returns the final weights folder (``weights/step_<n>``, n = max_steps or the step the early stop
    was reached). Every rank calls it (inside a process group)."""
    world = init_distributed(config.precision)
    if world.is_main:
        serve_configured(config.metrics)  # lives as long as the process, so the last step is still scraped
    torch.set_num_threads(config.threads_per_process or default_threads(config.num_processes))
    model, tokenizer = load_model(config.model)
    samples = [tokenize(tokenizer, *row) for row in load_rows(config.data)]
    shard_model(model, world)
    optimizer = build_optimizer(model, config.optimizer)
    root = config.output_dir
    start = _resume(root / "checkpoints", model, optimizer, config.checkpoint, world)
    metrics_file = root / "metrics.jsonl"
    if world.is_main:
        root.mkdir(parents=True, exist_ok=True)
        (root / "run_config.json").write_text(config.model_dump_json(indent=2))
    recent: deque[float] = deque(maxlen=config.stop_window)
    last = config.max_steps
    for step in range(start, config.max_steps):
        started = time.perf_counter()
        batch = step_samples(samples, config.data.batch_size, step, config.data.seed)
        loss, tokens, positions = _train_step(model, batch, config.data.seq_len, world)
        grad_norm = clip_gradients(model, config.optimizer.max_grad_norm)
        lr = lr_at(step, config.max_steps, config.optimizer)
        set_lr(optimizer, lr)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        done = step + 1
        recent.append(loss)  # the all-reduced loss: every rank takes the same decision to stop
        stop = _reached(recent, config)
        if world.is_main:  # every step, not only logged ones: a scrape sees the newest
            elapsed = time.perf_counter() - started
            trainer_metrics().record_step(done, tokens, loss, grad_norm, elapsed, elapsed)
        if world.is_main and (done % config.log_every == 0 or done == config.max_steps or stop):
            line = {"step": done, "loss": loss, "grad_norm": grad_norm, "lr": lr, "tokens": tokens,
                    "positions": positions, "step_time_s": time.perf_counter() - started}
            if stop:
                line["stopped_at_loss"] = sum(recent) / len(recent)
            log_step(metrics_file, line)
        if stop:
            last = done
            break
        if config.checkpoint.every and done % config.checkpoint.every == 0 and done < config.max_steps:
            save_checkpoint(root / "checkpoints", done, model, optimizer, world, config.checkpoint.keep)
    save_checkpoint(root / "checkpoints", last, model, optimizer, world, config.checkpoint.keep)
    return export_weights(model, tokenizer, root / "weights" / f"step_{last}", world)


def _reached(recent: deque[float], config: SFTConfig) -> bool:
    """Whether the early stop's loss target is met by a full window of recent losses."""
    if config.stop_at_loss is None or len(recent) < config.stop_window:
        return False
    return sum(recent) / len(recent) <= config.stop_at_loss


def _resume(
    root: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, config: CheckpointConfig, world: World
) -> int:
    latest = latest_checkpoint(root) if config.resume else None
    if latest is None:
        return 0
    progress = load_checkpoint(latest, model, optimizer)
    if world.is_main:
        print(f"resumed from {latest} (step {progress['step']})", flush=True)
    return int(progress["step"])


def _train_step(model: Any, batch: list[Sample], seq_len: int, world: World) -> tuple[float, int, int]:
    """Forward/backward over this rank's micro-batches; returns (mean token NLL over all ranks, trainable tokens,
    positions run forward and backward over all ranks: the step's compute)."""
    micro_batches = pack(batch, seq_len)
    positions = sum(mb.positions for mb in micro_batches)
    tokens = trainable_tokens(micro_batches)
    normalizer = max(tokens, 1) / world.world_size  # FSDP averages gradients over ranks
    mine = distribute(micro_batches, world.world_size)[world.rank]
    local = 0.0
    for i, mb in enumerate(mine):
        sync_gradients_after(model, last=i == len(mine) - 1)
        tensors = MicroBatchTensors.from_micro_batch(mb, world.device)
        logprobs, _ = token_logprobs(model, tensors)
        loss = -(logprobs * tensors.loss_mask).sum() / normalizer
        loss.backward()
        local += loss.item()
    return all_reduce_sum(local, world) / world.world_size, tokens, positions


def main(argv: list[str] | None = None) -> None:
    """``python -m trainer_adapter.train.sft CONFIG [KEY=VALUE ...]`` (one rank; torchrun starts several)."""
    run_rank("trainer_adapter.train.sft", SFTConfig, run_sft, argv)


if __name__ == "__main__":
    main()


__all__ = ["main", "run_sft"]
