"""Tests for the multiply-tool environment: data, tool, reward, bad replies, and full rollouts."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from multiply_tool import UNPARSED_CALL, gold_completion, load_environment, multiply

from verifiers.errors import UsageError
from verifiers.state import State
from verifiers.testing import Reply, ScriptedServer


@pytest.fixture(scope="module")
def env():
    return load_environment(num_train_examples=300, num_eval_examples=50)


# -- data ------------------------------------------------------------------------------


def test_splits_have_requested_sizes_and_default_sizes(env) -> None:
    assert (len(env.get_dataset()), len(env.get_eval_dataset())) == (300, 50)
    default = load_environment()
    assert (len(default.get_dataset()), len(default.get_eval_dataset())) == (5000, 200)


def test_prompt_answer_and_tool(env) -> None:
    row = env.get_eval_dataset()[0]
    assert [(m["role"], m["content"]) for m in row["prompt"]] == [("user", row["question"])]
    a, b = (int(x) for x in row["question"].split("*"))
    assert 100 <= a <= 999 and 100 <= b <= 999
    assert row["answer"] == str(a * b)
    assert [t["function"]["name"] for t in env.oai_tools] == ["multiply"]


def test_rows_are_deterministic_and_splits_disjoint() -> None:
    a = load_environment(num_train_examples=30, num_eval_examples=10, seed=3)
    b = load_environment(num_train_examples=30, num_eval_examples=10, seed=3)
    c = load_environment(num_train_examples=30, num_eval_examples=10, seed=4)
    assert a.get_dataset()["question"] == b.get_dataset()["question"]
    assert a.get_eval_dataset()["question"] != c.get_eval_dataset()["question"]
    large = load_environment(num_train_examples=5000, num_eval_examples=10, seed=3)
    assert large.get_eval_dataset()["question"] == a.get_eval_dataset()["question"]  # eval rows ignore train size
    questions = large.get_dataset()["question"]
    assert len(set(questions)) == 5000 and not set(questions) & set(large.get_eval_dataset()["question"])


# -- tool and reward -------------------------------------------------------------------


def test_multiply_checks_its_arguments() -> None:
    assert multiply(123, 456) == 56088
    for bad in ("123", 1.5, True):
        with pytest.raises(TypeError, match="must be an integer"):
            multiply(bad, 2)  # type: ignore[arg-type]


async def _score(env, completion: list[dict[str, Any]], answer: str = "56088") -> float:
    prompt = [{"role": "user", "content": "123*456"}]
    state = State.new(prompt=prompt, answer=answer)
    return (await env.rubric.score_rollout(prompt, completion, answer, state)).reward


@pytest.mark.parametrize(
    ("reply", "reward"),
    [
        ("56088", 1.0),
        (" 56088\n", 1.0),
        ("56089", 0.0),
        ("The product is 56088", 0.0),
        ("", 0.0),
    ],
)
async def test_reward_reads_the_final_answer(env, reply: str, reward: float) -> None:
    completion = gold_completion("123*456")[:-1] + [{"role": "assistant", "content": reply}]
    assert await _score(env, completion) == reward


async def test_a_rollout_that_ends_on_a_call_scores_zero(env) -> None:
    call = gold_completion("123*456")[0]
    assert await _score(env, [{**call, "content": "56088"}]) == 0.0


def test_gold_completion_is_one_correct_call() -> None:
    call, tool, answer = gold_completion("123*456")
    assert json.loads(call["tool_calls"][0]["function"]["arguments"]) == {
        "a": 123,
        "b": 456,
    }
    assert (tool["role"], tool["content"], answer["content"]) == (
        "tool",
        "56088",
        "56088",
    )


# -- arguments -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_train_examples": -1}, "0 or more"),
        ({"num_eval_examples": 1.5}, "must be an integer"),
        ({"num_train_examples": 0, "num_eval_examples": 0}, "both 0"),
        ({"min_value": 10, "max_value": 5}, "min_value <= max_value"),
        ({"min_value": 1, "max_value": 3, "num_train_examples": 10}, "only 9 problems"),
        ({"max_turns": 1}, "at least 2"),
        ({"seed": "x"}, "must be an integer"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_environment(**kwargs)


# -- rollouts against the scripted server ------------------------------------------------


def _call(name: str, arguments: str) -> dict[str, Any]:
    return {
        "id": "c1",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def _scripted(first: Reply):
    """A model that sends ``first``, then answers with whatever the last tool or user message said."""

    def policy(request) -> Reply:
        if request.assistant_turns == 0:
            return first
        return Reply(str(request.messages[-1]["content"]))

    return policy


async def _rollout(env, first: Reply) -> State:
    server = ScriptedServer(policy=_scripted(first))
    async with server.serving() as base_url:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="x")
        row = {
            "prompt": [{"role": "user", "content": "123*456"}],
            "answer": "56088",
            "example_id": 0,
        }
        return await env.rollout(row, client, "scripted")


async def test_a_correct_rollout_calls_the_tool_and_scores_one(env) -> None:
    state = await _rollout(env, Reply("", tool_calls=[_call("multiply", '{"a": 123, "b": 456}')]))
    roles = [m["role"] for m in state["completion"]]
    assert roles == ["assistant", "tool", "assistant"]
    assert state["completion"][1]["content"] == "56088"
    await env.rubric.score_group([state])
    assert state["reward"] == 1.0


@pytest.mark.parametrize(
    ("first", "error"),
    [
        (
            Reply("", tool_calls=[_call("divide", '{"a": 1, "b": 2}')]),
            "unknown tool 'divide'",
        ),
        (Reply("", tool_calls=[_call("multiply", '{"a": 1, "b": ')]), "not valid JSON"),
        (
            Reply("", tool_calls=[_call("multiply", '{"a": 1}')]),
            "missing required arguments: b",
        ),
        (
            Reply("", tool_calls=[_call("multiply", '{"a": 1, "b": 2, "c": 3}')]),
            "unexpected arguments: c",
        ),
        (
            Reply("", tool_calls=[_call("multiply", '{"a": "x", "b": 2}')]),
            "a must be an integer",
        ),
        (
            Reply('<tool_call>\n{"name": "multiply", "arguments": {"a": 1'),
            UNPARSED_CALL,
        ),
    ],
)
async def test_bad_calls_are_answered_with_an_error_not_a_crash(env, first: Reply, error: str) -> None:
    state = await _rollout(env, first)
    assert not state.get("error"), state.get("error")
    reply = state["completion"][1]
    assert reply["role"] in ("tool", "user") and error in reply["content"]
    assert state["tool_errors"]
    assert state["completion"][-1]["role"] == "assistant"  # the model was asked again
    await env.rubric.score_group([state])
    assert state["reward"] == 0.0
