"""The tuple era's scoring on the State-era rubric: one rollout from its fields, parallel lists, and the order
of a rollout's reward functions (at once in 0.1.x, in order in the State era)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import verifiers as vf
from verifiers.compat.scoring import score_parallel_lists, score_tuple_rollout
from verifiers.compat.turns import TupleEraConventions
from verifiers.rollout.conventions import STATE_ERA
from verifiers.state import State

PROMPT = [{"role": "user", "content": "2+2?"}]
REPLY = [{"role": "assistant", "content": "4"}]


def _overlap_rubric() -> tuple[vf.Rubric, dict[str, int]]:
    """Two functions that each wait a moment; ``peak`` says how many ran at once."""
    running = {"now": 0, "peak": 0}

    async def slow(completion) -> float:
        running["now"] += 1
        running["peak"] = max(running["peak"], running["now"])
        await asyncio.sleep(0.02)
        running["now"] -= 1
        return 1.0

    async def slower(completion) -> float:
        return await slow(completion)

    return vf.Rubric(funcs=[slow, slower]), running


def _state() -> State:
    return State.new(prompt=PROMPT, answer="4", task="default", info={}, example_id=0, model="m", client=None,
                     sampling_args={}, oai_tools=[], tool_defs=[], input={"prompt": PROMPT, "answer": "4"})


async def test_one_rollout_from_its_fields_runs_its_functions_at_once_and_times_itself() -> None:
    rubric, running = _overlap_rubric()
    state: dict[str, Any] = {}
    score = await score_tuple_rollout(rubric, PROMPT, REPLY, "4", state)
    assert score.reward == 2.0 and score.metrics == {"slow": 1.0, "slower": 1.0}
    assert running["peak"] == 2 and state["timing"]["scoring_ms"] > 0


async def test_a_rubric_that_asks_for_order_keeps_it_in_the_tuple_era_too() -> None:
    rubric, running = _overlap_rubric()
    rubric.parallelize_scoring = False
    await score_tuple_rollout(rubric, PROMPT, REPLY, "4", None)
    assert running["peak"] == 1


@pytest.mark.parametrize("conventions, peak", [(TupleEraConventions(False), 2), (STATE_ERA, 1)])
async def test_each_eras_group_scoring_keeps_its_order_of_functions(conventions: Any, peak: int) -> None:
    rubric, running = _overlap_rubric()
    states = [_state(), _state()]
    await conventions.score_group(rubric, states)
    assert running["peak"] == peak * 2  # the two rollouts' copies of one function always run together
    assert [s["reward"] for s in states] == [2.0, 2.0] and states[0]["advantage"] == 0.0


async def test_parallel_lists_that_are_not_parallel_are_refused_and_score_nothing() -> None:
    rubric, running = _overlap_rubric()
    with pytest.raises(ValueError, match="got 2 prompts but 1 answers; lists must be parallel"):
        await score_parallel_lists(rubric, [PROMPT] * 2, [REPLY] * 2, ["4"], [{}, {}])
    assert running["peak"] == 0


async def test_parallel_lists_give_one_column_per_function() -> None:
    rubric = vf.Rubric(funcs=[lambda completion: 1.0], weights=[0.5])
    scores = await score_parallel_lists(rubric, [PROMPT] * 2, [REPLY] * 2, ["4"] * 2, [{}, {}])
    assert scores.reward == [0.5, 0.5] and scores.metrics == {"<lambda>": [1.0, 1.0]}
    unweighted = await score_parallel_lists(rubric, [PROMPT], [REPLY], ["4"], [{}], apply_weights=False)
    assert unweighted.reward == [1.0]
