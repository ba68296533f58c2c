from __future__ import annotations

import logging

import pytest

from verifiers.parsers.parser import Parser
from verifiers.rubrics.rubric import Rubric
from verifiers.rubrics.rubric_group import RubricGroup
from verifiers.state import State

PROMPT = [{"role": "user", "content": "2+2?"}]
COMPLETION = [{"role": "assistant", "content": "4"}]


def correct(completion, answer) -> float:
    return float(completion[-1]["content"] == answer)


def length(completion) -> float:
    return float(len(completion[-1]["content"]))


def half(**kwargs) -> float:
    return 0.5


def group_of_two() -> RubricGroup:
    first = Rubric(funcs=[correct, length], weights=[1.0, 0.0])
    second = Rubric(funcs=[half, correct], weights=[2.0, 3.0])
    return RubricGroup([first, second])


def test_empty_and_non_rubric_inputs_are_rejected():
    with pytest.raises(ValueError, match="at least one rubric"):
        RubricGroup([])
    with pytest.raises(TypeError, match="takes Rubric instances, got function"):
        RubricGroup([correct])


def test_names_funcs_and_weights_are_concatenated():
    group = group_of_two()
    assert group.get_reward_func_names() == ["correct", "length", "half", "correct"]
    assert group.get_reward_funcs() == [correct, length, half, correct]
    assert group.funcs == group.get_reward_funcs()
    assert group.get_reward_weights() == group.weights == [1.0, 0.0, 2.0, 3.0]


async def test_rewards_add_up_and_same_name_metrics_are_summed():
    score = await group_of_two().score_rollout(PROMPT, COMPLETION, "4", {})
    # first: 1*1 + 0*1 = 1; second: 2*0.5 + 3*1 = 4
    assert score.reward == pytest.approx(5.0)
    assert score.metrics == {"correct": 2.0, "length": 1.0, "half": 0.5}


async def test_score_rollouts_and_scoring_time_counted_once():
    group = group_of_two()
    states = [{"timing": {"total_ms": 10.0}}, {"timing": {"total_ms": 10.0}}]
    wrong = [{"role": "assistant", "content": "five"}]
    scores = await group.score_rollouts([PROMPT] * 2, [COMPLETION, wrong], ["4", "4"], states, None, None)
    assert scores.reward == pytest.approx([5.0, 1.0])
    assert scores.metrics == {"correct": [2.0, 0.0], "length": [1.0, 4.0], "half": [0.5, 0.5]}
    for state in states:
        assert state["timing"]["total_ms"] == pytest.approx(10.0 + state["timing"]["scoring_ms"])


async def test_each_rubric_injects_its_own_parser():
    def parsed(parser, completion) -> float:
        return float(parser.parse_answer(completion))

    doubling = Rubric(funcs=[parsed], parser=Parser(extract_fn=lambda text: int(text) * 2))
    plain = Rubric(funcs=[parsed])
    score = await RubricGroup([doubling, plain]).score_rollout(PROMPT, COMPLETION, "4", {})
    assert score.metrics == {"parsed": 12.0}


async def test_score_group_writes_summed_rewards_and_advantages():
    states = []
    for content in ("4", "44"):
        state = State.new(prompt=PROMPT, answer="4")
        state["completion"] = [{"role": "assistant", "content": content}]
        states.append(state)
    await group_of_two().score_group(states)
    assert [s["reward"] for s in states] == [5.0, 1.0]
    assert [s["advantage"] for s in states] == [2.0, -2.0]
    assert states[1]["metrics"] == {"correct": 0.0, "length": 2.0, "half": 0.5}


def test_add_reward_func_goes_to_first_rubric_with_warning(caplog):
    group = group_of_two()
    with caplog.at_level(logging.WARNING, logger="verifiers.rubrics"):
        group.add_reward_func(half, weight=4.0)
        group.add_metric(length)
    assert group.rubrics[0].get_reward_func_names() == ["correct", "length", "half", "length"]
    assert group.get_reward_weights() == [1.0, 0.0, 4.0, 0.0, 2.0, 3.0]
    assert "first rubric" in caplog.text


async def test_class_objects_reach_every_rubric_and_failures_are_aggregated():
    def needs_tool(tool):
        return tool()

    group = RubricGroup([Rubric(funcs=[needs_tool]), Rubric(funcs=[needs_tool])])
    await group.score_rollout(PROMPT, COMPLETION, "4", {})
    assert group.failure_counts == {"needs_tool": 2}
    group.add_class_object("tool", lambda: 0.25)
    score = await group.score_rollout(PROMPT, COMPLETION, "4", {})
    assert score.reward == 0.5


async def test_nested_groups_and_unknown_kwargs():
    inner = group_of_two()
    outer = RubricGroup([inner, Rubric(funcs=[half])], label="outer")
    assert outer.label == "outer"
    score = await outer.score_rollout(PROMPT, COMPLETION, "4", {})
    assert score.reward == pytest.approx(5.5)
    assert score.metrics["half"] == 1.0
    with pytest.raises(TypeError, match="shadow"):
        RubricGroup([inner], funcs=[half])


def test_a_groups_lists_are_views_that_cannot_be_set():
    group = group_of_two()
    with pytest.raises(AttributeError, match="change a member rubric"):
        group.funcs = [half]
    with pytest.raises(AttributeError, match="change a member rubric"):
        group.reward_weights = [1.0, 1.0, 1.0, 1.0]  # 0.1.x's name writes the same list
    assert group.get_reward_weights() == [1.0, 0.0, 2.0, 3.0]
