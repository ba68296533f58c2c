"""Rubric subclasses that override a scoring method are scored through it, in groups and per era."""

from __future__ import annotations

from typing import Any

import pytest

from verifiers.rubrics.overrides import score_states, scoring_override
from verifiers.rubrics.rubric import Rubric
from verifiers.rubrics.rubric_group import RubricGroup
from verifiers.state import State
from verifiers.types import RolloutScore

PROMPT = [{"role": "user", "content": "2+2?"}]


def one(completion) -> float:
    return 1.0


class TupleRubric(Rubric):  # 0.1.x style: its own score_rollout(prompt, completion, ...)
    async def score_rollout(self, prompt, completion, answer, state, task="default", info=None, **kwargs):
        return RolloutScore(reward=0.5, metrics={"custom": 0.5})


class GroupRubric(Rubric):  # 0.3.0 style: its own score_group(states), writing into the states
    async def score_group(self, states, **kwargs):
        for state in states:
            state["reward"], state["metrics"] = 0.25, {"custom": 0.25}


class StateRolloutRubric(Rubric):
    async def score_rollout(self, state):
        state["reward"], state["metrics"] = 0.75, {"custom": 0.75}


class BadRubric(Rubric):
    async def score_rollout(self, prompt, completion, answer, state, task="default", info=None, **kwargs):
        return 0.5


def make_state() -> State:
    state = State.new(prompt=PROMPT, answer="4", example_id=0)
    state["completion"] = [{"role": "assistant", "content": "4"}]
    return state


def test_which_method_a_subclass_overrides() -> None:
    assert scoring_override(Rubric(funcs=[one])) is None
    assert scoring_override(RubricGroup([Rubric(funcs=[one])])) is None  # the SDK's own classes
    assert scoring_override(TupleRubric()) == "tuple_score_rollout"
    assert scoring_override(GroupRubric()) == "score_group"
    assert scoring_override(StateRolloutRubric()) == "state_score_rollout"


@pytest.mark.parametrize(("member", "reward", "custom"), [
    (GroupRubric(funcs=[one]), 1.25, 0.25),
    (TupleRubric(funcs=[one]), 1.5, 0.5),
    (StateRolloutRubric(funcs=[one]), 1.75, 0.75),
])
async def test_a_group_scores_an_overriding_member_through_its_override(member: Rubric, reward: float,
                                                                       custom: float) -> None:
    states = [make_state(), make_state()]
    await RubricGroup([member, Rubric(funcs=[one])]).score_group(states)
    assert [s["reward"] for s in states] == [reward, reward]
    assert states[0]["metrics"] == {"custom": custom, "one": 1.0}
    assert states[0]["advantage"] == 0.0


async def test_the_tuple_era_scores_each_rollout_through_score_rollout() -> None:
    states = [make_state(), make_state()]
    await score_states(TupleRubric(funcs=[one]), states, tuple_era=True)
    # The override's score, with every function's name reported (0.0 where it gave none), as 0.1.x did.
    assert [(s["reward"], s["metrics"]) for s in states] == [(0.5, {"custom": 0.5, "one": 0.0})] * 2
    plain = [make_state()]
    await score_states(Rubric(funcs=[one]), plain, tuple_era=True)
    assert (plain[0]["reward"], plain[0]["metrics"], plain[0]["advantage"]) == (1.0, {"one": 1.0}, 0.0)


async def test_the_state_era_calls_score_group_even_of_a_tuple_style_override_elsewhere() -> None:
    states = [make_state()]
    await score_states(GroupRubric(funcs=[one]), states, tuple_era=True)  # score_group wins
    assert states[0]["reward"] == 0.25


async def test_an_override_that_returns_no_score_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="BadRubric.score_rollout returned float, not a RolloutScore"):
        await score_states(BadRubric(funcs=[one]), [make_state()], tuple_era=True)


async def test_a_mapping_with_a_reward_is_accepted() -> None:
    class DictRubric(Rubric):
        async def score_rollout(self, prompt, completion, answer, state, task="default", info=None,
                                **kwargs: Any) -> dict[str, Any]:
            return {"reward": 2.0, "metrics": {"x": 2.0}}

    states = [make_state()]
    await score_states(DictRubric(), states, tuple_era=True)
    assert (states[0]["reward"], states[0]["metrics"]) == (2.0, {"x": 2.0})
