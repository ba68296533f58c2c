"""What the main job reads back and shows: finished runs' JSON lines, vf-eval results, the reward curve."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trainer_adapter.errors import TrainerError

# -- reading results -------------------------------------------------------------------------------


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The complete JSON lines of ``path`` (none when it does not exist yet; a half-written last line waits)."""
    if not path.is_file():
        return []
    lines = []
    for text in path.read_text().splitlines():
        try:
            lines.append(json.loads(text))
        except json.JSONDecodeError:
            break
    return lines


def eval_run_dir(output_dir: Path, env_id: str, model: str) -> Path:
    """The one ``vf-eval`` run folder of ``env_id`` with ``model`` under ``output_dir`` (the job empties it first)."""
    runs = sorted((output_dir / "evals" / f"{env_id}--{model}").glob("*/metadata.json"))
    if len(runs) != 1:
        raise TrainerError(f"expected one vf-eval run of {model} under {output_dir / 'evals'}, found {len(runs)}")
    return runs[0].parent


def held_out_reward(run_dir: Path) -> float:
    """The mean reward of a finished ``vf-eval`` run."""
    metadata = json.loads((run_dir / "metadata.json").read_text())
    if metadata.get("status") != "complete":
        raise TrainerError(f"vf-eval run {run_dir} did not complete (status {metadata.get('status')!r})")
    return float(metadata["avg_reward"])


def summary_line(before: float, after: float) -> str:
    """The job's last line."""
    return f"held-out reward: {before:.2f} -> {after:.2f}"


# -- the reward curve ------------------------------------------------------------------------------


def plot_reward_curve(rl_dir: Path, before: float, after: float, path: Path,
                      title: str = "tiny model on arithmetic: SFT warm start, then RL",
                      baselines: dict[str, float] | None = None) -> Path:  # fmt: skip
    """``reward_curve.png``: training reward per RL step, online held-out evaluations, vf-eval before/after, and
    each of ``baselines`` (label: held-out reward) as a dotted line."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a server
    import matplotlib.pyplot as plt

    train = read_jsonl(rl_dir / "orchestrator_metrics.jsonl")
    online = sorted(read_jsonl(rl_dir / "eval_metrics.jsonl"), key=lambda e: e["step"])
    last = max([t["step"] + 1 for t in train] + [e["step"] for e in online] + [1])
    figure, axes = plt.subplots(figsize=(7, 4), dpi=120)
    # Batch n is generated before trainer step n, so its reward belongs to the weights after n steps at most.
    axes.plot([t["step"] for t in train], [t["reward"] for t in train], color="tab:blue", alpha=0.8,
              label="training reward (batch mean, sampled)")
    if online:
        axes.plot([e["step"] for e in online], [e["reward"] for e in online], "o--", color="tab:green",
                  label="held-out reward, greedy (online eval)")
    axes.plot([0, last], [before, after], "s", color="tab:red", markersize=8,
              label=f"held-out reward, vf-eval: {before:.2f} -> {after:.2f}")
    for (label, reward), color in zip((baselines or {}).items(), ("tab:gray", "tab:purple", "tab:brown")):
        axes.axhline(reward, linestyle=":", color=color, label=f"baseline, {label}: {reward:.2f}")
    axes.set_xlabel("RL step")
    axes.set_ylabel("reward")
    shown = [t["reward"] for t in train] + [e["reward"] for e in online] + [before, after, *(baselines or {}).values()]
    axes.set_ylim(0, min(1.0, max(shown) + 0.15))  # room for the legend; the rise stays readable
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return path


def mismatch_kl(rl_dir: Path) -> dict[str, float]:
    """The trainer's per-token KL estimate against the inference server's logprobs, over the run's steps.

    With the job's synchronous schedule every rollout comes from the weights the trainer holds, so this is
    the trainer/vLLM difference alone; with ``max_async_level`` 1 it adds up to one step's policy change.
    """
    values = [float(m["mismatch_kl"]) for m in read_jsonl(rl_dir / "trainer_metrics.jsonl") if "mismatch_kl" in m]
    if not values:
        return {}
    return {"mean": sum(values) / len(values), "max": max(values)}


def errored_rollouts(root: Path, env_id: str, models: list[str]) -> dict[str, int]:
    """Rollouts that ended in an error: per ``vf-eval`` run (by model name) and in RL (the orchestrator's count)."""
    counts = {}
    for model in models:
        metadata = json.loads((eval_run_dir(root, env_id, model) / "metadata.json").read_text())
        counts[model] = sum(int(n) for n in (metadata.get("error_counts") or {}).values())
    counts["rl"] = sum(int(m.get("failed_rollouts", 0)) for m in read_jsonl(root / "rl" / "orchestrator_metrics.jsonl"))
    return counts


__all__ = ["errored_rollouts", "eval_run_dir", "held_out_reward", "mismatch_kl", "plot_reward_curve", "read_jsonl",
           "summary_line"]
