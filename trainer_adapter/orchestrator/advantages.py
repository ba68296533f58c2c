"""Advantages: each rollout's reward minus its group's mean reward.

No division by the group's standard deviation (it over-weights groups that are nearly
solved or nearly failed) and no leave-one-out baseline: the INTELLECT-3 recipe. The
advantage is one number per rollout, given to every trainable token of its samples.
"""

from __future__ import annotations

from collections.abc import Sequence

from trainer_adapter.orchestrator.rollouts import RolloutGroup


def compute_advantages(rewards: Sequence[float]) -> list[float]:
    """``reward − mean(rewards)`` for each reward of one group."""
    if not rewards:
        return []
    mean = sum(rewards) / len(rewards)
    return [r - mean for r in rewards]


def assign_advantages(group: RolloutGroup) -> RolloutGroup:
    """Set ``advantage`` on every rollout of ``group`` (in place) and return it."""
    for rollout, advantage in zip(group.rollouts, compute_advantages(group.rewards)):
        rollout.advantage = advantage
    return group


__all__ = ["assign_advantages", "compute_advantages"]
