"""Per-environment figures of a batch in a mix, and the console line the orchestrator prints per step.

In a mix (an ``EnvGroup``, each rollout labelled with its environment's name as ``task``) every
metrics line carries ``reward/<task>``, the mean reward of that environment's rollouts in the
batch, and ``share/<task>``, the fraction of the batch's rollouts that came from it: the figure to
hold against the mix's weights. Groups with all-equal rewards that the buffer drops skew the
shares towards the environment whose groups differ more (``buffer.drop_uniform_groups = false``
keeps them, and the shares then follow the draw).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from trainer_adapter.orchestrator.rollouts import RolloutGroup


def batch_task_metrics(groups: Sequence[RolloutGroup]) -> dict[str, float]:
    """``reward/<task>`` and ``share/<task>`` for every task with rollouts in the batch, sorted by task."""
    by_task: dict[str, list[float]] = {}
    for group in groups:
        by_task.setdefault(group.task, []).extend(group.rewards)
    total = sum(len(rewards) for rewards in by_task.values())
    metrics: dict[str, float] = {}
    for task, rewards in sorted(by_task.items()):
        metrics[f"reward/{task}"] = sum(rewards) / len(rewards)
        metrics[f"share/{task}"] = len(rewards) / total
    return metrics


def tasks_in(line: Mapping[str, object]) -> list[str]:
    """The tasks a metrics line has per-task rewards for, sorted."""
    return sorted(key.removeprefix("reward/") for key in line if key.startswith("reward/"))


def step_line(line: Mapping[str, float], max_steps: int) -> str:
    """One console line for a written batch: step, reward, in a mix each task's reward and share, and with
    validation the groups checked and rejected so far.

    E.g. ``step 3/20  reward 0.412 (64 rollouts)  arithmetic 0.310 (75%)  reverse-text 0.700 (25%)``.
    """
    text = f"step {int(line['step']) + 1}/{max_steps}  reward {line['reward']:.3f} ({int(line['rollouts'])} rollouts)"
    for task in tasks_in(line):
        text += f"  {task} {line[f'reward/{task}']:.3f} ({line[f'share/{task}']:.0%})"
    if "validated_groups" in line:
        text += f"  validated {int(line['validated_groups'])} groups, {int(line.get('invalid_groups', 0))} rejected"
    return text


__all__ = ["batch_task_metrics", "step_line", "tasks_in"]
