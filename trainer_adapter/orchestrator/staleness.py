"""Staleness: how many optimizer steps a rollout lags the weights it trains.

The trainer's step ``n`` updates the weights of version ``n``; a group dispatched under
version ``v`` is ``n − v`` steps off-policy there. Groups more than ``max_off_policy_steps``
behind are dropped (and counted) instead of trained: the importance ratio can correct a
little staleness, not any amount.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trainer_adapter.orchestrator.rollouts import RolloutGroup


@dataclass
class StalenessResult:
    fresh: list[RolloutGroup]
    dropped_groups: int
    dropped_rollouts: int
    off_policy_steps: list[int]
    """Off-policy steps of each kept group, in order (for the ``off_policy_level`` metrics)."""


def off_policy_steps(group: RolloutGroup, step: int) -> int:
    """How many versions ``group`` lags the weights trained at ``step``."""
    return step - group.policy_version


def drop_stale(groups: Sequence[RolloutGroup], step: int, max_off_policy_steps: int) -> StalenessResult:
    """Keep the groups at most ``max_off_policy_steps`` behind ``step``; count the others."""
    if max_off_policy_steps < 0:
        raise ValueError(f"max_off_policy_steps must be >= 0, got {max_off_policy_steps}")
    fresh: list[RolloutGroup] = []
    lags: list[int] = []
    dropped_groups = dropped_rollouts = 0
    for group in groups:
        lag = off_policy_steps(group, step)
        if lag < 0:
            raise ValueError(f"group of example {group.example_id} has version {group.policy_version} > step {step}")
        if lag > max_off_policy_steps:
            dropped_groups += 1
            dropped_rollouts += len(group.rollouts)
            continue
        fresh.append(group)
        lags.append(lag)
    return StalenessResult(fresh, dropped_groups, dropped_rollouts, lags)


__all__ = ["StalenessResult", "drop_stale", "off_policy_steps"]
