"""The State era's decorators: stop/cleanup/teardown discovery, and 0.3.0's marker-only decorators."""

from __future__ import annotations

import pytest

import verifiers as vf
from verifiers.decorators import cleanup_handlers, stop_conditions, teardown_handlers


class Marked:
    @vf.stop
    def b_plain(self, state) -> bool:
        return False

    @vf.stop(priority=5)
    def z_urgent(self, state) -> bool:
        return False

    @vf.cleanup(stage="group")
    async def tidy(self, state) -> None: ...

    @vf.cleanup(priority=2)
    async def first_tidy(self, state) -> None: ...

    @vf.teardown
    async def close(self) -> None: ...


def test_discovery_orders_by_priority_then_name():
    obj = Marked()
    assert [m.__name__ for m in stop_conditions(obj)] == ["z_urgent", "b_plain"]
    # A cleanup runs per rollout whatever its stage, as in 0.3.0's classic environments.
    assert [m.__name__ for m in cleanup_handlers(obj)] == ["first_tidy", "tidy"]
    assert [m.__name__ for m in teardown_handlers(obj)] == ["close"]
    assert Marked.tidy._vf_cleanup_stage == "group" and Marked.first_tidy._vf_cleanup_stage == "rollout"


@pytest.mark.parametrize("name", ["setup", "update", "metric", "reward", "advantage"])
def test_marker_decorators_work_bare_and_with_arguments(name):
    decorator = getattr(vf, name)

    @decorator
    def bare(self, state) -> float:
        return 1.0

    @decorator(priority=3)
    def called(self, state) -> float:
        return 1.0

    assert bare(None, {}) == 1.0  # the function itself comes back, only marked
    assert getattr(bare, f"_vf_{name}_priority") == 0 and getattr(called, f"_vf_{name}_priority") == 3


def test_staged_markers_record_the_stage_and_reward_its_weight():
    @vf.reward(weight=0.5, stage="group")
    def ranked(states) -> list[float]:
        return [1.0] * len(states)

    @vf.metric(stage="group")
    def spread(states) -> list[float]:
        return [0.0] * len(states)

    @vf.advantage
    def centred(states) -> None: ...

    assert (ranked._vf_reward_weight, ranked._vf_reward_stage) == (0.5, "group")
    assert spread._vf_metric_stage == "group" and centred._vf_advantage_stage == "group"
    assert vf.update(stage="group")(centred) is centred


def test_markers_do_not_make_a_method_a_stop_condition_or_cleanup():
    class Env:
        @vf.setup
        def prepare(self, state) -> None: ...

        @vf.metric
        def length(self, state) -> float:
            return 0.0

    assert stop_conditions(Env()) == [] and cleanup_handlers(Env()) == []


def test_priority_may_be_passed_positionally_as_in_0_3_0():
    def check(self, state) -> bool:
        return True

    assert vf.stop(check, 7) is check and check._vf_stop_priority == 7


@pytest.mark.parametrize("call, error, message", [
    (lambda: vf.stop(10), TypeError, "pass options by keyword"),
    (lambda: vf.cleanup(stage="episode"), ValueError, "stage must be one of \\['rollout', 'group'\\]"),
    (lambda: vf.metric(priority="high"), TypeError, "priority must be an int"),
    (lambda: vf.reward(weight="1"), TypeError, "weight must be a number"),
    (lambda: vf.teardown(priority=True), TypeError, "priority must be an int"),
])
def test_bad_arguments_are_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
