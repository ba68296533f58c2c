"""Per-environment figures of a batch and the orchestrator's console line."""

from __future__ import annotations

import pytest

from trainer_adapter.orchestrator.rollouts import Rollout, RolloutGroup
from trainer_adapter.orchestrator.task_metrics import batch_task_metrics, step_line, tasks_in


def _group(task: str, rewards: list[float]) -> RolloutGroup:
    return RolloutGroup(example_id=0, rollouts=[Rollout(r, []) for r in rewards], policy_version=0, task=task)


def test_reward_and_share_per_task() -> None:
    groups = [
        _group("sums", [1.0, 0.0, 1.0, 1.0]),
        _group("rev", [0.5, 0.25, 0.25, 0.0]),
        _group("sums", [0.0, 0.0, 0.0, 1.0]),
    ]
    metrics = batch_task_metrics(groups)
    assert list(metrics) == ["reward/rev", "share/rev", "reward/sums", "share/sums"]
    assert metrics["reward/sums"] == pytest.approx(4 / 8)
    assert metrics["reward/rev"] == pytest.approx(1.0 / 4)
    assert metrics["share/sums"] == pytest.approx(8 / 12) and metrics["share/rev"] == pytest.approx(4 / 12)


def test_a_task_without_rollouts_in_the_batch_has_no_entry() -> None:
    assert batch_task_metrics([_group("sums", [1.0, 0.0])]) == {"reward/sums": 0.5, "share/sums": 1.0}
    assert batch_task_metrics([]) == {}


def test_step_line_shows_each_task_with_its_share() -> None:
    line = {
        "step": 2,
        "reward": 0.4125,
        "rollouts": 64,
        **batch_task_metrics([_group("arithmetic", [0.25] * 48), _group("reverse-text", [0.9] * 16)]),
    }
    assert tasks_in(line) == ["arithmetic", "reverse-text"]
    assert step_line(line, 20) == (
        "step 3/20  reward 0.412 (64 rollouts)  arithmetic 0.250 (75%)  reverse-text 0.900 (25%)"
    )
    assert step_line({"step": 0, "reward": 1.0, "rollouts": 8}, 1) == "step 1/1  reward 1.000 (8 rollouts)"
    checked = {"step": 1, "reward": 0.5, "rollouts": 8, "validated_groups": 7, "invalid_groups": 2}
    assert step_line(checked, 2) == "step 2/2  reward 0.500 (8 rollouts)  validated 7 groups, 2 rejected"
    assert step_line({**checked, "invalid_groups": 0}, 2).endswith("validated 7 groups, 0 rejected")
