"""Advantages: each rollout's reward minus its group's mean reward, optionally over the group's std.

By default there is no division by the group's standard deviation (it over-weights groups
that are nearly solved or nearly failed) and no leave-one-out baseline: the INTELLECT-3
recipe. ``normalize_std`` (the orchestrator's ``advantage_std_normalize``) gives GRPO's
advantage instead::

    A_j = (R_j − mean(R)) / (std(R) + 1e-6)      std over the group as a population (divide by G, not G − 1)

The population std is the group's own spread, defined for every group size, and it puts the
advantages of a two-rollout group at ±1 (up to the 1e-6). A group whose rewards are all equal
gets advantages of exactly 0 either way (not the rounding error of its mean). The advantage is
one number per rollout, given to every trainable token of its samples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from trainer_adapter.orchestrator.rollouts import RolloutGroup

STD_EPSILON = 1e-6
"""Added to the std so a group whose rewards barely differ cannot divide by ~0."""


def compute_advantages(rewards: Sequence[float], normalize_std: bool = False) -> list[float]:
    """``reward − mean(rewards)``, over ``std + 1e-6`` when ``normalize_std``, for each reward of one group."""
    if not rewards:
        return []
    if all(r == rewards[0] for r in rewards):
        return [0.0] * len(rewards)
    mean = sum(rewards) / len(rewards)
    centred = [r - mean for r in rewards]
    if not normalize_std:
        return centred
    std = math.sqrt(sum(c * c for c in centred) / len(centred))
    return [c / (std + STD_EPSILON) for c in centred]


def assign_advantages(group: RolloutGroup, normalize_std: bool = False) -> RolloutGroup:
    """Set ``advantage`` on every rollout of ``group`` (in place) and return it."""
    for rollout, advantage in zip(group.rollouts, compute_advantages(group.rewards, normalize_std)):
        rollout.advantage = advantage
    return group


__all__ = ["STD_EPSILON", "assign_advantages", "compute_advantages"]
