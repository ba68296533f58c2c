"""Scoring details rewards depend on, in both eras: function order, overriding rubric subclasses,
metric names, and which message a parser reads. Each case also checks the original's own scores."""

from __future__ import annotations

import pytest
from harness import EvalRun


def _state_scoring(run: EvalRun) -> None:
    assert run.metrics["tests_passed"] == [1.0, 0.5]  # tests_ran had finished (and written) first
    assert run.metrics["<lambda>"] == [0.25, 0.25]  # the later function of that name
    assert run.metrics["curated"] == [0.5, 0.5]  # the group member's own score_group
    assert run.rewards == [pytest.approx(1.0 + 1.0 + 0.7 + 1.25 + 0.5), pytest.approx(1.0 + 0.5 + 0.7 + 1.25 + 0.5)]


def _tuple_scoring(run: EvalRun) -> None:
    assert run.metrics["accepted"] == [1.0, 0.0]  # parsed from the env's verdict message
    assert run.metrics["scaled"] == [0.5, 0.0]
    assert run.rewards == [0.5, 0.0]


@pytest.mark.slow
def test_state_era_scoring_as_on_0_3_0(compare_with_original) -> None:
    compare_with_original("compat_state_scoring", "state", "echo", _state_scoring)


@pytest.mark.slow
def test_tuple_era_scoring_as_on_0_1_5(compare_with_original) -> None:
    compare_with_original("compat_tuple_scoring", "tuple", "echo", _tuple_scoring)


def _tuple_lists(run: EvalRun) -> None:
    assert run.metrics["exact"] == [1.0, 0.0] and run.metrics["short"] == [1.0, 0.0]
    assert run.metrics["words"] == [2.0, 5.0] and run.metrics["mentions_blue"] == [1.0, 0.0]
    assert run.rewards == [pytest.approx(1.0 + 0.5 + 0.5 + 1.0), pytest.approx(1.25)]


@pytest.mark.slow
def test_tuple_era_reward_lists_as_on_0_1_5(compare_with_original) -> None:
    compare_with_original("compat_tuple_lists", "tuple", "echo", _tuple_lists)
