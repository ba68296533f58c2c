"""``vf-train plot RUN_DIR``: a run's reward per step, overall and per environment, as a PNG.

It reads the run folder of ``vf-train rl``: ``orchestrator_metrics.jsonl`` (training reward per
batch, and in a mix ``reward/<task>`` per environment) and, when the run evaluated online,
``eval_metrics.jsonl`` (held-out reward, per environment in a mix). ``vf-train rl`` draws
the same figure into ``RUN_DIR/reward_curve.png`` when it finishes; the command redraws it, also
while a run is still going.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.main_job_report import read_jsonl
from trainer_adapter.orchestrator.task_metrics import tasks_in

TRAIN_METRICS = "orchestrator_metrics.jsonl"
EVAL_METRICS = "eval_metrics.jsonl"


class PlotConfig(BaseModel):
    """What to draw and where."""

    model_config = ConfigDict(extra="forbid")

    run_dir: Path = Field(description="A vf-train rl output folder (holding orchestrator_metrics.jsonl).")
    png: Path | None = Field(None, description="Where to write the PNG; default RUN_DIR/reward_curve.png.")

    @property
    def png_path(self) -> Path:
        return self.png or self.run_dir / "reward_curve.png"


def read_run_metrics(run_dir: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The run's training lines and online-eval lines (sorted by step).

    Raises:
        TrainerConfigError: ``run_dir`` has no training metrics, or none complete yet.
    """
    path = run_dir / TRAIN_METRICS
    if not path.is_file():
        raise TrainerConfigError(
            f"{path} does not exist: {run_dir} is not a vf-train rl run folder, or the run "
            "has not written its first batch yet"
        )
    train = read_jsonl(path)
    if not train:
        raise TrainerConfigError(f"{path} has no complete metrics line yet: nothing to draw")
    if any("step" not in line or "reward" not in line for line in train):
        raise TrainerConfigError(f"{path} has lines without step and reward: not a vf-train rl metrics file")
    evals = sorted(read_jsonl(run_dir / EVAL_METRICS), key=lambda e: e["step"])
    return train, evals


@dataclass
class Curve:
    """One line of the figure: its legend label, colour, style and points."""

    label: str
    colour: str
    steps: list[float]
    rewards: list[float]
    held_out: bool = False
    """Online held-out evaluations (dashed, with markers) rather than training reward."""


def reward_curves(train: list[dict[str, Any]], evals: list[dict[str, Any]]) -> list[Curve]:
    """The figure's lines: training reward overall and per task; held-out reward per task (overall if not a mix)."""
    tasks = sorted({task for line in train for task in tasks_in(line)})
    colours = {task: f"C{i + 1}" for i, task in enumerate(tasks)}
    curves = [
        Curve(
            "training reward, all" if tasks else "training reward",
            "C0",
            [line["step"] for line in train],
            [line["reward"] for line in train],
        )
    ]
    curves += [_curve(f"training reward, {task}", colours[task], train, f"reward/{task}") for task in tasks]
    eval_tasks = [task for task in tasks if any(f"reward/{task}" in e for e in evals)]
    held_out = f"held-out reward ({eval_sampling(evals)})"
    if eval_tasks:
        curves += [
            _curve(f"{held_out}, {task}", colours[task], evals, f"reward/{task}", held_out=True)
            for task in eval_tasks
        ]
    elif evals:
        curves.append(_curve(held_out, "C0", evals, "reward", held_out=True))
    return curves


def eval_sampling(evals: list[dict[str, Any]]) -> str:
    """How the online evaluations sampled, for a label: ``greedy`` or ``T=1, 4 replies a row``."""
    temperature = max((float(e.get("temperature", 0.0)) for e in evals), default=0.0)
    if temperature == 0:
        return "greedy"
    replies = max((e.get("rollouts", 1) // max(e.get("examples", 1), 1) for e in evals), default=1)
    return f"T={temperature:g}, {replies} replies a row"


def _curve(label: str, colour: str, lines: list[dict[str, Any]], key: str, held_out: bool = False) -> Curve:
    points = [(line["step"], line[key]) for line in lines if key in line]
    return Curve(label, colour, [p[0] for p in points], [p[1] for p in points], held_out)


def plot_run(config: PlotConfig) -> Path:
    """Draw the run's :func:`reward_curves` into ``config.png_path``; returns that path."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a server
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4), dpi=110)
    for curve in reward_curves(*read_run_metrics(config.run_dir)):
        style = {"linestyle": "--", "marker": "o"} if curve.held_out else {"alpha": 0.85}
        axes.plot(curve.steps, curve.rewards, color=curve.colour, label=curve.label, **style)
    axes.set_xlabel("RL step (batch)")
    axes.set_ylabel("reward")
    axes.set_ylim(0, 1.05)
    axes.set_title(f"reward per step: {config.run_dir.name}")
    axes.grid(alpha=0.3)
    axes.legend(loc="best", fontsize=7)
    figure.tight_layout()
    path = config.png_path
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return path


__all__ = ["Curve", "PlotConfig", "plot_run", "read_run_metrics", "reward_curves"]
