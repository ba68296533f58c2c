"""The reward filter: its cycle, a typed minimum, and rows without a reward."""

from __future__ import annotations

from verifiers.viewer.reward_filter import RewardFilter
from verifiers.viewer.rollouts import RolloutRow


def _row(reward: float | None) -> RolloutRow:
    return RolloutRow(line=1, offset=0, length=1, reward=reward)


def test_the_cycle_and_what_each_step_lets_through() -> None:
    rows = [_row(0.0), _row(0.5), _row(1.0), _row(None)]
    shown = RewardFilter(threshold=0.5)
    seen = []
    for _ in range(3):
        seen.append((shown.describe(), [r.reward for r in rows if shown.matches(r)]))
        shown = shown.cycled()
    assert seen == [("all rollouts", [0.0, 0.5, 1.0, None]), ("reward ≥ 0.5", [0.5, 1.0]), ("reward < 0.5", [0.0])]
    assert shown == RewardFilter(threshold=0.5)


def test_a_typed_minimum() -> None:
    shown = RewardFilter().at_least(0.75)
    assert shown.describe() == "reward ≥ 0.75" and shown.matches(_row(0.75)) and not shown.matches(_row(0.7))
