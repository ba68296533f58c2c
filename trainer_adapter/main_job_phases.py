"""What each phase of the main job runs, derived from the job's config: ``vf-train sft`` (the warm start and the
SFT-only baseline) and ``vf-train rl`` configs, and the ``vf-eval`` command line of every held-out measurement.
Pure functions of the config (no process starts here), so they are tested and reused (the GPU check, the
benchmarks) without running the job; :mod:`trainer_adapter.main_job` runs them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from trainer_adapter.main_job_config import MainJobConfig


def served_name(config: MainJobConfig) -> str:
    """The model name the job's server answers to and the orchestrator sends."""
    return config.model


def sft_run_config(config: MainJobConfig, start: Path | None = None) -> dict[str, Any]:
    """``vf-train sft``'s config (an ``SFTConfig``) for the warm start: the tiny model built from the seed, or the
    catalog model's folder ``start``."""
    return {
        "max_steps": config.sft.steps, "output_dir": str(config.output_dir / "sft"), "log_every": 25,
        "num_processes": config.sft.num_processes, "precision": config.precision,
        "model": config.sft.model_shape(config.seed) if start is None else {"path": str(start)},
        "data": {"env": config.env_id, "env_args": config.all_env_args(), "batch_size": config.sft.batch_size,
                 "seed": config.seed},
        "optimizer": {"lr": config.sft.lr}, "checkpoint": {"resume": False}, "stop_at_loss": config.sft.stop_at_loss,
    }  # fmt: skip


def sft_baseline_config(config: MainJobConfig, start: Path, batch_size: int) -> dict[str, Any]:
    """``vf-train sft``'s config for the equal-compute SFT-only baseline: from ``start`` (the weights RL started
    from), ``rl.steps`` steps of ``batch_size`` reference answers at a constant learning rate, every step logged
    (its positions are the compute compared with RL's)."""
    return {
        "max_steps": config.rl.steps, "output_dir": str(config.output_dir / "sft_baseline"), "log_every": 1,
        "num_processes": config.rl.num_processes, "precision": config.precision, "model": {"path": str(start)},
        "data": {"env": config.env_id, "env_args": config.all_env_args(), "batch_size": batch_size,
                 "seed": config.seed},
        "optimizer": {"lr": config.sft_baseline.lr, "warmup_steps": 0, "schedule": "constant"},
        "checkpoint": {"resume": False, "every": 0},
    }  # fmt: skip


def equal_compute_batch(rl_positions: int, steps: int, example_positions: float) -> int:
    """Examples per SFT step so that ``steps`` steps run about ``rl_positions`` positions forward and backward."""
    return max(1, round(rl_positions / (steps * example_positions)))


def rl_run_config(config: MainJobConfig, warm_start: Path, server_url: str | None = None) -> dict[str, Any]:
    """``vf-train rl``'s config (an ``RLRunConfig``) starting from ``warm_start``, on the job's running
    server at ``server_url`` (None: ``vf-train rl`` starts its own)."""
    rl = config.rl
    return {
        "max_steps": rl.steps, "output_dir": str(config.output_dir / "rl"),
        "env": {"id": config.env_id, "args": config.all_env_args()},
        "model": {"path": str(warm_start), "lora": rl.lora.model_dump()},
        "orchestrator": {
            "model_name": served_name(config), "batch_size": rl.batch_size,
            "rollouts_per_example": rl.rollouts_per_example,
            # One batch of groups in flight: with max_async_level 1 no rollout is more than a step behind.
            "max_inflight_groups": max(rl.batch_size // rl.rollouts_per_example, 1),
            "max_async_level": rl.max_async_level, "max_off_policy_steps": rl.max_off_policy_steps,
            "continuous_batching": rl.continuous_batching, "advantage_std_normalize": rl.advantage_std_normalize,
            "temperature": rl.temperature, "max_tokens": config.max_tokens,
            "num_train_ranks": rl.num_processes, "seed": config.seed, "eval_every": rl.eval_every,
            "eval_examples": config.eval.num_examples,
            # Groups whose rollouts all score the same carry no gradient; keeping them costs the tiny trainer
            # little and makes the logged reward the policy's own (not that of the groups that survived a
            # filter), and a policy that solves (or fails) everything can never starve the batch.
            "buffer": {"drop_uniform_groups": False},
        },
        "inference": {"python": str(config.vllm_python), "max_num_seqs": config.server.max_num_seqs,
                      "dtype": config.server.dtype, "gpu_memory_utilization": config.server.gpu_memory_utilization,
                      "start_timeout_s": config.server_timeout_s, "urls": [server_url] if server_url else []},
        # No mid-run checkpoints: the job is rerun, never resumed, and each one is a DCP write of the model and
        # optimizer plus the orchestrator's state on a 2-core machine. The final weights are exported as always.
        "trainer": {"num_processes": rl.num_processes, "precision": config.precision, "checkpoint": {"every": 0},
                    "optimizer": {"lr": rl.lr, "warmup_steps": rl.warmup_steps, "schedule": "constant"}},
    }  # fmt: skip


def vf_eval_command(config: MainJobConfig, base_url: str, model: str, greedy: bool = False) -> list[str]:
    """The ``vf-eval`` command line for the held-out measurement (BEFORE and AFTER alike); ``greedy``: one reply
    per row at temperature 0."""
    ev = config.eval
    replies, temperature = (1, 0.0) if greedy else (ev.rollouts_per_example, ev.temperature)
    return [
        *console_script("vf-eval", "verifiers.cli.vf_eval"), config.env_id, "-m", model, "-b", base_url,
        "-k", "VF_MAIN_JOB_KEY", "-n", str(ev.num_examples), "-r", str(replies), "-c", "512", "--coalesce-requests",
        "-t", str(config.max_tokens), "-T", str(temperature), "-a", json.dumps(config.all_env_args()),
        "-o", str(config.output_dir),
    ]  # fmt: skip



def console_script(name: str, module: str) -> list[str]:
    """This interpreter's console script ``name``, or ``python -m module`` when it is not installed."""
    script = Path(sys.executable).parent / name
    return [str(script)] if script.is_file() else [sys.executable, "-m", module]


__all__ = ["console_script", "equal_compute_batch", "rl_run_config", "served_name", "sft_baseline_config",
           "sft_run_config", "vf_eval_command"]
