"""Stale groups are dropped and counted."""

from __future__ import annotations

import pytest

from trainer_adapter.orchestrator.rollouts import Rollout, RolloutGroup
from trainer_adapter.orchestrator.staleness import drop_stale


def _group(example_id: int, version: int, size: int = 2) -> RolloutGroup:
    return RolloutGroup(example_id, [Rollout(float(i), []) for i in range(size)], version)


def test_groups_beyond_the_limit_are_dropped_and_counted() -> None:
    groups = [_group(0, 10), _group(1, 8), _group(2, 7, size=3), _group(3, 2)]
    result = drop_stale(groups, step=10, max_off_policy_steps=2)
    assert [g.example_id for g in result.fresh] == [0, 1]
    assert result.off_policy_steps == [0, 2]
    assert (result.dropped_groups, result.dropped_rollouts) == (2, 5)


def test_zero_limit_is_on_policy_only() -> None:
    result = drop_stale([_group(0, 4), _group(1, 3)], step=4, max_off_policy_steps=0)
    assert [g.example_id for g in result.fresh] == [0]
    assert result.dropped_groups == 1


def test_bad_inputs_are_rejected() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        drop_stale([], step=0, max_off_policy_steps=-1)
    with pytest.raises(ValueError, match="version 5 > step 4"):
        drop_stale([_group(0, 5)], step=4, max_off_policy_steps=1)
