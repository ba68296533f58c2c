"""Rubric subclasses that override a scoring method are scored through it, in groups and per era."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from verifiers.compat.turns import TupleEraConventions
from verifiers.rubrics.overrides import score_states, scoring_override
from verifiers.rubrics.rubric import Rubric
from verifiers.rubrics.rubric_group import RubricGroup
from verifiers.state import State
from verifiers.types import RolloutScore

TUPLE_ERA = TupleEraConventions(messages_in_is_completed=False)  # how a tuple-era environment scores a group
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


class SemaphoreRubric(Rubric):  # 0.2 style: a second, optional parameter
    async def score_rollout(self, state, score_sem=None):
        state["reward"], state["metrics"] = 0.75, {"custom": 0.75}


def test_which_method_a_subclass_overrides() -> None:
    assert scoring_override(SemaphoreRubric()) == "state_score_rollout"
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
    await TUPLE_ERA.score_group(TupleRubric(funcs=[one]), states)
    # The override's score, with every function's name reported (0.0 where it gave none), as 0.1.x did.
    assert [(s["reward"], s["metrics"]) for s in states] == [(0.5, {"custom": 0.5, "one": 0.0})] * 2
    plain = [make_state()]
    await TUPLE_ERA.score_group(Rubric(funcs=[one]), plain)
    assert (plain[0]["reward"], plain[0]["metrics"], plain[0]["advantage"]) == (1.0, {"one": 1.0}, 0.0)


async def test_the_state_era_also_scores_through_a_tuple_shaped_override() -> None:
    states = [make_state()]
    await score_states(TupleRubric(funcs=[one]), states)
    assert (states[0]["reward"], states[0]["metrics"]) == (0.5, {"custom": 0.5, "one": 0.0})


async def test_the_state_era_calls_score_group_even_of_a_tuple_style_override_elsewhere() -> None:
    states = [make_state()]
    await TUPLE_ERA.score_group(GroupRubric(funcs=[one]), states)  # score_group wins
    assert states[0]["reward"] == 0.25


async def test_an_override_that_returns_no_score_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="BadRubric.score_rollout returned float, not a RolloutScore"):
        await TUPLE_ERA.score_group(BadRubric(funcs=[one]), [make_state()])


async def test_a_mapping_with_a_reward_is_accepted() -> None:
    class DictRubric(Rubric):
        async def score_rollout(self, prompt, completion, answer, state, task="default", info=None,
                                **kwargs: Any) -> dict[str, Any]:
            return {"reward": 2.0, "metrics": {"x": 2.0}}

    states = [make_state()]
    await TUPLE_ERA.score_group(DictRubric(), states)
    assert (states[0]["reward"], states[0]["metrics"]) == (2.0, {"x": 2.0})


class SuperGroupRubric(Rubric):
    """Adds a bonus after scoring its functions through super(), which also fills the steps' rewards."""

    async def score_group(self, states, **kwargs):
        await super().score_group(states, **kwargs)
        for state in states:
            state["reward"] += 1.0


async def test_a_members_writes_into_the_steps_do_not_outlive_the_group() -> None:
    state = make_state()
    state["trajectory"] = [{"reward": None, "advantage": None}]
    await RubricGroup([SuperGroupRubric(funcs=[one]), Rubric(funcs=[one])]).score_group([state])
    assert state["reward"] == 3.0 and state["trajectory"][0]["reward"] == 3.0  # the group's total, not 2.0


async def test_overriding_members_score_the_rollouts_at_once() -> None:
    running = {"now": 0, "peak": 0}

    class Slow(Rubric):
        async def score_rollout(self, prompt, completion, answer, state, task="default", info=None, **kwargs):
            running["now"] += 1
            running["peak"] = max(running["peak"], running["now"])
            await asyncio.sleep(0.02)
            running["now"] -= 1
            return {"reward": 1.0, "metrics": {"slow": 1.0}}  # a mapping is accepted in a group too

    states = [make_state() for _ in range(4)]
    await RubricGroup([Slow()]).score_group(states)
    assert running["peak"] == 4 and [s["reward"] for s in states] == [1.0] * 4


async def test_a_tuple_era_env_without_override_keeps_group_functions_and_columns() -> None:
    def group_size(states) -> list[float]:
        return [float(len(states))] * len(states)

    def uses_column(difficulty) -> float:
        return 1.0 if difficulty == "hard" else 0.0

    states = [make_state() for _ in range(3)]
    for state in states:
        state["input"]["difficulty"] = "hard"
    await TUPLE_ERA.score_group(Rubric(funcs=[group_size, uses_column]), states)
    assert [s["metrics"] for s in states] == [{"group_size": 3.0, "uses_column": 1.0}] * 3
