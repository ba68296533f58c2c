"""Tests for the math500 environment: bundled data, reward, arguments, and a full rollout."""

from __future__ import annotations

import collections

import openai
import pytest
from math500 import load_environment
from math500.environment import read_rows

from verifiers.data.answers import BOXED_SYSTEM_PROMPT
from verifiers.errors import UsageError
from verifiers.state import State
from verifiers.testing import ScriptedServer
from verifiers.testing.policies import math as math_policy


@pytest.fixture(scope="module")
def env():
    return load_environment()


# -- data ------------------------------------------------------------------------------


def test_all_500_rows_with_subject_and_level(env) -> None:
    rows = env.get_eval_dataset()
    assert len(rows) == 500
    subjects = collections.Counter(info["subject"] for info in rows["info"])
    assert subjects["Algebra"] == 124 and subjects["Counting & Probability"] == 38
    assert {info["level"] for info in rows["info"]} == {1, 2, 3, 4, 5}


def test_rows_are_problem_answer_with_boxed_prompt(env) -> None:
    row = env.get_eval_dataset()[0]
    assert row["question"].startswith("Convert the point $(0,3)$")
    assert row["answer"] == "\\left( 3, \\frac{\\pi}{2} \\right)"
    assert row["task"] == "math500"
    assert row["info"]["unique_id"] == "test/precalculus/807.json"
    assert [(m["role"], m["content"]) for m in row["prompt"]] == [
        ("system", BOXED_SYSTEM_PROMPT),
        ("user", row["question"]),
    ]


def test_loading_is_deterministic_and_num_examples_takes_the_first_rows() -> None:
    a = load_environment(num_examples=5).get_eval_dataset()
    b = load_environment(num_examples=5).get_eval_dataset()
    assert a["question"] == b["question"] == [r["problem"] for r in read_rows()[:5]]


def test_system_prompt_override() -> None:
    row = load_environment(num_examples=1, system_prompt="Box it.").get_eval_dataset()[0]
    assert row["prompt"][0] == {"role": "system", "content": "Box it."}


# -- reward ----------------------------------------------------------------------------


async def _score(env, reply: str, answer: str):
    prompt = [{"role": "user", "content": "question"}]
    completion = [{"role": "assistant", "content": reply}]
    state = State.new(prompt=prompt, answer=answer)
    state["completion"] = completion
    await env.rubric.score_rollout(state)  # the State era's scoring, as this SingleTurnEnv is scored
    return state


@pytest.mark.parametrize(
    ("reply", "reward"),
    [
        ("So the answer is \\boxed{\\frac{14}{3}}.", 1.0),  # correct
        ("\\boxed{\\dfrac{28}{6}}", 1.0),  # correct, unsimplified
        ("\\boxed{14/3}", 1.0),  # correct, plain notation
        ("14/3 = 4.67, rounded: \\boxed{5}", 0.0),  # partly right: right value in the work, wrong box
        ("\\boxed{\\frac{3}{14}}", 0.0),  # wrong
        ("", 0.0),  # empty
    ],
)
async def test_reward_on_hand_made_replies(env, reply: str, reward: float) -> None:
    score = await _score(env, reply, "\\frac{14}{3}")
    assert score["reward"] == pytest.approx(reward)
    assert list(score["metrics"]) == ["correct_answer"]


# -- arguments -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_examples": 0}, "num_examples"),
        ({"num_examples": -2}, "num_examples"),
        ({"num_examples": True}, "num_examples"),
        ({"system_prompt": 3}, "system_prompt"),
    ],
)
def test_bad_arguments_raise_a_clear_error(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_environment(**kwargs)


def test_split_is_not_an_argument() -> None:
    with pytest.raises(TypeError, match="split"):
        load_environment(split="train")


# -- end to end ------------------------------------------------------------------------


async def test_rollouts_against_a_scripted_model() -> None:
    env = load_environment(num_examples=3)
    rows = env.get_eval_dataset()
    # Right LaTeX answers for the first two problems; a wrong one for the third.
    key = {rows["question"][0]: rows["answer"][0], rows["question"][1]: rows["answer"][1], rows["question"][2]: "-1"}
    with ScriptedServer(policy=math_policy(key), port=0).running() as base_url:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="x")
        results = await env.evaluate(client, "scripted", num_examples=3, rollouts_per_example=1)
    assert [o["reward"] for o in results["outputs"]] == [1.0, 1.0, 0.0]


def test_eval_only_unless_asked() -> None:
    """MATH-500 is what models are scored on: no training rows unless train_on_eval says so."""
    env = load_environment()
    assert env.dataset is None
    with pytest.raises(ValueError, match="no training dataset"):
        env.get_dataset()
    assert len(load_environment(train_on_eval=True).get_dataset()) == 500
    with pytest.raises(UsageError, match="train_on_eval"):
        load_environment(train_on_eval="yes")
