"""Tests for the gsm8k environment: bundled data, reward, arguments, and a full rollout."""

from __future__ import annotations

import re

import openai
import pytest
from gsm8k import load_environment
from gsm8k.environment import final_answer, read_split

from verifiers.data.answers import BOXED_SYSTEM_PROMPT
from verifiers.errors import UsageError
from verifiers.state import State
from verifiers.testing import ScriptedServer
from verifiers.testing.policies import math as math_policy


@pytest.fixture(scope="module")
def env():
    return load_environment(num_examples=20)


# -- data ------------------------------------------------------------------------------


def test_trains_on_train_and_evaluates_on_test() -> None:
    env = load_environment()
    train, test = env.get_dataset(), env.get_eval_dataset()
    assert (len(train), len(test)) == (7473, 1319)
    assert train["question"] == [r["question"] for r in read_split("train")]
    assert test["question"] == [r["question"] for r in read_split("test")]
    assert set(train["question"]).isdisjoint(test["question"])  # GSM8K's splits share no problem
    assert all(re.fullmatch(r"-?\d+(\.\d+)?", a) for a in list(train["answer"]) + list(test["answer"]))


def test_num_train_examples_takes_the_first_train_rows() -> None:
    env = load_environment(num_examples=2, num_train_examples=5)
    assert (len(env.get_dataset()), len(env.get_eval_dataset())) == (5, 2)


def test_rows_are_question_answer_with_boxed_prompt(env) -> None:
    row = env.get_eval_dataset()[0]
    assert row["question"].startswith("Janet")
    assert row["answer"] == "18"
    assert row["task"] == "gsm8k"
    assert [(m["role"], m["content"]) for m in row["prompt"]] == [
        ("system", BOXED_SYSTEM_PROMPT),
        ("user", row["question"]),
    ]


def test_loading_is_deterministic() -> None:
    a = load_environment(num_examples=50).get_eval_dataset()
    b = load_environment(num_examples=50).get_eval_dataset()
    assert a["question"] == b["question"] and a["answer"] == b["answer"]


def test_num_examples_takes_the_first_rows() -> None:
    full = read_split("test")
    rows = load_environment(num_examples=3).get_eval_dataset()
    assert rows["question"] == [r["question"] for r in full[:3]]


def test_system_prompt_override() -> None:
    row = load_environment(num_examples=1, system_prompt="Box it.").get_eval_dataset()[0]
    assert row["prompt"][0] == {"role": "system", "content": "Box it."}


def test_final_answer_drops_thousands_separators() -> None:
    assert final_answer("so 1,000 + 80 = 1,080\n#### 1,080") == "1080"
    with pytest.raises(ValueError, match="####"):
        final_answer("no marker")


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
        ("16 - 3 - 4 = 9 eggs, 9 * 2 = 18.\n\\boxed{18}", 1.0),  # correct
        ("The total is \\boxed{18.0} dollars.", 1.0),  # correct, other notation
        ("<think>9 eggs at $2</think>\\boxed{18}", 1.0),  # correct, after a reasoning block
        ("9 * 2 = 18, so half is \\boxed{9}", 0.0),  # partly right: right work, wrong boxed answer
        ("\\boxed{20}", 0.0),  # wrong
        ("", 0.0),  # empty
    ],
)
async def test_reward_on_hand_made_replies(env, reply: str, reward: float) -> None:
    score = await _score(env, reply, "18")
    assert score["reward"] == pytest.approx(reward)
    assert list(score["metrics"]) == ["correct_answer"]


# -- arguments -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_train_examples": 0}, "num_train_examples"),
        ({"num_examples": 0}, "num_examples"),
        ({"num_examples": -5}, "num_examples"),
        ({"num_examples": "10"}, "num_examples"),
        ({"system_prompt": None}, "system_prompt"),
    ],
)
def test_bad_arguments_raise_a_clear_error(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_environment(**kwargs)


# -- end to end ------------------------------------------------------------------------


async def test_rollouts_against_a_scripted_model() -> None:
    env = load_environment(num_examples=4)
    rows = env.get_eval_dataset()
    # The first three answers are right, the fourth is off by one.
    key = {q: a for q, a in zip(rows["question"][:3], rows["answer"][:3])}
    key[rows["question"][3]] = str(int(rows["answer"][3]) + 1)
    with ScriptedServer(policy=math_policy(key), port=0).running() as base_url:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="x")
        results = await env.evaluate(client, "scripted", num_examples=4, rollouts_per_example=1)
    assert [o["reward"] for o in results["outputs"]] == [1.0, 1.0, 1.0, 0.0]
