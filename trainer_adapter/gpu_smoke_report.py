"""The one summary block ``scripts/gpu_smoke.sh`` ends with: what the inference measurement and the main job found.

It reads what the two wrote (nothing is re-measured): ``measure.py --json``'s
:class:`~trainer_adapter.inference.measure.Measurement`, and the main job's folder (``summary.json``,
``main_job_config.json``, ``rl/orchestrator_metrics.jsonl``, ``rl/trainer_metrics.jsonl``)::

    python -m trainer_adapter.gpu_smoke_report --measure M.json --job outputs/gpu_smoke/main_job \\
        --wall measure=95 --wall main_job=420

Trainer tokens/s is every position a step ran forward and backward on (prompts included) over the
step's busy time: its wall time less the wait for the batch, so the weight export is included.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from trainer_adapter.errors import TrainerError
from trainer_adapter.inference.measure import Measurement
from trainer_adapter.main_job_config import MainJobConfig
from trainer_adapter.main_job_report import read_jsonl

_REWARDS_PER_LINE = 10


@dataclass(frozen=True)
class JobFigures:
    """What a finished main job's folder says."""

    config: MainJobConfig
    summary: dict[str, Any]
    rewards: list[float]  # training reward per RL step
    update_weights_s: list[float]  # /update_weights round trip per RL step, as the orchestrator timed it
    trainer_tokens_per_s: list[float]
    export_s: list[float]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return dict(json.loads(path.read_text()))
    except FileNotFoundError:
        raise TrainerError(f"{path} does not exist: did the run finish?") from None


def trainer_rates(lines: list[dict[str, Any]]) -> list[float]:
    """Tokens/s of each trainer step that logged its ``tokens``: tokens over (step time − wait for the batch)."""
    rates = []
    for line in lines:
        busy = float(line.get("time/step", 0.0)) - float(line.get("time/wait_for_batch", 0.0))
        if "tokens" in line and busy > 0:
            rates.append(float(line["tokens"]) / busy)
    return rates


def read_job(job_dir: Path) -> JobFigures:
    """The figures of the main job in ``job_dir``; a :class:`TrainerError` if it did not finish."""
    config = MainJobConfig.model_validate(_read_json(job_dir / "main_job_config.json"))
    summary = _read_json(job_dir / "summary.json")
    orchestrator = read_jsonl(job_dir / "rl" / "orchestrator_metrics.jsonl")
    trainer = read_jsonl(job_dir / "rl" / "trainer_metrics.jsonl")
    return JobFigures(
        config=config, summary=summary, rewards=[float(m["reward"]) for m in orchestrator],
        update_weights_s=[float(m["time/update_weights"]) for m in orchestrator if "time/update_weights" in m],
        trainer_tokens_per_s=trainer_rates(trainer),
        export_s=[float(m["time/export"]) for m in trainer if "time/export" in m],
    )  # fmt: skip


def _spread(values: list[float], unit: str, digits: int = 3) -> str:
    if not values:
        return "n/a"
    return (
        f"median {statistics.median(values):.{digits}f} {unit}, max {max(values):.{digits}f} {unit} (n={len(values)})"
    )


def _reward_lines(rewards: list[float]) -> list[str]:
    out = []
    for start in range(0, len(rewards), _REWARDS_PER_LINE):
        chunk = rewards[start : start + _REWARDS_PER_LINE]
        out.append(f"  steps {start + 1}-{start + len(chunk)}: " + " ".join(f"{r:.3f}" for r in chunk))
    return out or ["  (no RL step logged)"]


def _model_line(config: MainJobConfig) -> str:
    from trainer_adapter.model.config import ModelConfig
    from trainer_adapter.model.tiny import parameter_count  # torch: only when the block is drawn

    sft = config.sft
    count = parameter_count(ModelConfig.model_validate(sft.model_shape(config.seed)))
    return (
        f"{count / 1e6:.1f}M parameters ({sft.num_layers} layers x {sft.hidden_size} wide, {sft.num_heads} "
        f"heads / {sft.num_kv_heads} kv); trainer precision {config.precision}, vLLM {config.server.dtype}"
    )


def format_block(measure: Measurement, job: JobFigures, walls: dict[str, float]) -> str:
    """The summary block, one figure per line."""
    s, ev = job.summary, job.config.eval
    greedy = ""
    if s.get("greedy_before") is not None and s.get("greedy_after") is not None:
        greedy = f"; greedy accuracy {s['greedy_before']:.3f} -> {s['greedy_after']:.3f}"
    kl = s.get("mismatch_kl") or {}
    kl_text = f"mean {max(kl['mean'], 0.0):.5f}, max {max(kl['max'], 0.0):.5f}" if kl else "n/a"
    phases = ", ".join(f"{k} {v:.0f} s" for k, v in s.get("seconds", {}).items())
    lines = [
        "== gpu_smoke summary",
        f"model                 {_model_line(job.config)}",
        f"RL training reward    per step ({len(job.rewards)} steps of {job.config.rl.batch_size} rollouts):",
        *_reward_lines(job.rewards),
        (f"held-out reward       {s['before']:.3f} -> {s['after']:.3f} (sampled, {ev.num_examples} rows x "
         f"{ev.rollouts_per_example}){greedy}"),
        f"mismatch KL           {kl_text} (per token, trainer vs vLLM logprobs, over the RL steps)",
        (f"/update_weights       idle {_spread(measure.update_idle_s, 's')}; under load "
         f"{_spread(measure.update_under_load_s, 's')}"),
        (f"                      in RL {_spread(job.update_weights_s, 's')}; trainer export "
         f"{_spread(job.export_s, 's')}"),
        (f"generation            {measure.tokens_per_s:.0f} tokens/s ({measure.requests} requests x "
         f"{measure.max_tokens} tokens, {measure.dtype}); {measure.tokens_per_s_with_updates:.0f} with updates "
         "in flight"),
        f"trainer               {_spread(job.trainer_tokens_per_s, 'tokens/s', digits=0)} per step",
        f"vLLM ready after      {measure.ready_s:.1f} s",
        f"wall                  {', '.join(f'{k} {v:.0f} s' for k, v in walls.items()) or 'n/a'}",
        f"                      main job phases: {phases or 'n/a'}",
    ]  # fmt: skip
    return "\n".join(lines)


def parse_wall(items: list[str]) -> dict[str, float]:
    """``["measure=95", "main_job=420.5"]`` → ``{"measure": 95.0, "main_job": 420.5}``."""
    walls = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            walls[name] = float(value)
        except ValueError:
            raise typer.BadParameter(f"{item!r} is not NAME=SECONDS") from None
        if not sep or not name:
            raise typer.BadParameter(f"{item!r} is not NAME=SECONDS")
    return walls


def main(
    measure: Annotated[Path, typer.Option(help="measure.py --json output.")],
    job: Annotated[Path, typer.Option(help="The main job's output_dir.")],
    wall: Annotated[list[str] | None, typer.Option(help="NAME=SECONDS, once per phase timed by the script.")] = None,
) -> None:
    """Print the gpu_smoke summary block."""
    walls = parse_wall(wall or [])
    try:
        measured = Measurement.model_validate_json(measure.read_text())
    except FileNotFoundError:
        raise TrainerError(f"{measure} does not exist: did the inference measurement finish?") from None
    typer.echo(format_block(measured, read_job(job), walls))


if __name__ == "__main__":
    typer.run(main)


__all__ = ["JobFigures", "format_block", "main", "parse_wall", "read_job", "trainer_rates"]
