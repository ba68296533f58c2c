"""Request merging: a group's identical first calls go out as one request with n replies, against a real server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from datasets import Dataset
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion

import verifiers as vf
from verifiers.clients import CoalescingClient
from verifiers.errors import MalformedModelResponseError
from verifiers.rollout.coalesce import RequestCoalescer, merge_key, one_reply, split_replies
from verifiers.testing import ScriptedRequest, ScriptedServer

_SAMPLING = {"temperature": 1.0, "max_tokens": 16, "logprobs": True, "extra_body": {"return_token_ids": True}}


def _numbered() -> Any:
    """A policy whose every reply is different ("r1", "r2", ...), so each rollout's tokens are its own."""
    count = 0

    def policy(request: ScriptedRequest) -> str:
        nonlocal count
        count += 1
        return f"r{count}"

    return policy


def _env(rows: int) -> vf.SingleTurnEnv:
    dataset = Dataset.from_list([{"question": f"q{i}", "answer": "r1"} for i in range(rows)])

    def exact(completion: vf.Messages, answer: str, **_: Any) -> float:
        return float(completion[-1]["content"] == answer)

    return vf.SingleTurnEnv(dataset=dataset, rubric=vf.Rubric(funcs=[exact]))


def _client(base_url: str) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)


async def _groups(env: vf.Environment, client: Any, rows: int, per_row: int,
                  sampling: dict[str, Any] | None = None) -> list[Any]:
    """What the RL orchestrator does: one ``generate`` per example with ``per_row`` copies, all at once."""
    dataset = env.get_dataset()
    calls = [env.generate([dataset[i]] * per_row, client, "m", sampling or _SAMPLING) for i in range(rows)]
    return list(await asyncio.gather(*calls))


def test_merge_key_ignores_n_1_and_refuses_what_must_go_alone() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "q"}], "temperature": 1.0}
    assert merge_key("/chat/completions", body) == merge_key("/chat/completions", {**body, "n": 1})
    assert merge_key("/chat/completions", body) != merge_key("/completions", body)
    assert merge_key("/chat/completions", body) != merge_key("/chat/completions", {**body, "temperature": 0.5})
    for alone in ({"n": 2}, {"seed": 3}, {"stream": True}, {"extra_body": {"seed": 3}}, {"temperature": float("nan")},
                  {"logit_bias": object()}):
        assert merge_key("/chat/completions", {**body, **alone}) is None, alone


def _response(n: int) -> ChatCompletion:
    choices = [{"index": i, "finish_reason": "stop", "message": {"role": "assistant", "content": f"c{i}"},
                "token_ids": list(range(i + 1))} for i in range(n)]
    return ChatCompletion.model_validate({
        "id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": choices,
        "usage": {"prompt_tokens": 5, "completion_tokens": n * (n + 1) // 2, "total_tokens": 5 + n * (n + 1) // 2},
        "prompt_token_ids": [1, 2, 3, 4, 5],
    })


def test_each_reply_becomes_a_response_of_its_own() -> None:
    reply = one_reply(_response(3), 2, 3)
    assert [c.message.content for c in reply.choices] == ["c2"] and reply.choices[0].index == 0
    assert reply.usage is not None and (reply.usage.completion_tokens, reply.usage.total_tokens) == (3, 8)
    assert reply.prompt_token_ids == [1, 2, 3, 4, 5]  # type: ignore[attr-defined]  # vLLM's extra field kept
    assert split_replies("not json", 2) == ["not json", "not json"]  # each rollout's shape check reports it
    with pytest.raises(MalformedModelResponseError, match="asked the model API for 4 replies .* got 3"):
        split_replies(_response(3), 4)


async def test_a_group_shares_one_request_and_each_rollout_keeps_its_own_reply() -> None:
    server = ScriptedServer(_numbered(), port=0)
    with server.running() as base_url:
        client = CoalescingClient(_client(base_url))
        results = await _groups(_env(4), client, rows=4, per_row=8)
    assert len(server.recent_requests) == 4  # 32 rollouts, one request per group
    assert (client.coalescer.requests, client.coalescer.replies) == (4, 32)
    texts = [o["completion"][-1]["content"] for r in results for o in r["outputs"]]
    assert sorted(texts, key=lambda t: int(t[1:])) == [f"r{i}" for i in range(1, 33)]  # every reply used once
    assert sum(o["reward"] for r in results for o in r["outputs"]) == 1.0  # only "r1" is right
    for result in results:
        for output, state in zip(result["outputs"], result.state):
            (turn,) = state["trajectory"]
            tokens = turn["tokens"]
            text = output["completion"][-1]["content"]
            assert bytes(tokens["completion_ids"][:-1]).decode() == text  # this reply's own ids (+ end token)
            assert len(tokens["completion_logprobs"]) == len(tokens["completion_ids"])


async def test_without_the_wrapper_every_rollout_sends_its_own_request() -> None:
    server = ScriptedServer(_numbered(), port=0)
    with server.running() as base_url:
        await _groups(_env(2), _client(base_url), rows=2, per_row=4)
    assert len(server.recent_requests) == 8


async def test_seeded_requests_are_never_merged() -> None:
    server = ScriptedServer(_numbered(), port=0)
    with server.running() as base_url:
        await _groups(_env(1), CoalescingClient(_client(base_url)), rows=1, per_row=4,
                      sampling={**_SAMPLING, "seed": 7})
    assert len(server.recent_requests) == 4


class _TwoTurns(vf.MultiTurnEnv):
    async def env_response(self, messages: vf.Messages, state: vf.State, **_: Any) -> vf.Messages:
        return [vf.UserMessage(content="again")]


async def test_multi_turn_merges_the_shared_first_turn_only() -> None:
    server = ScriptedServer(_numbered(), port=0)
    env = _TwoTurns(dataset=Dataset.from_list([{"question": "q", "answer": "a"}]), max_turns=2)
    with server.running() as base_url:
        (result,) = await _groups(env, CoalescingClient(_client(base_url)), rows=1, per_row=4)
    assert all(len(s["trajectory"]) == 2 for s in result.state)
    assert len(server.recent_requests) == 1 + 4  # the second turns follow different replies: four requests


async def test_a_failed_request_is_every_rollouts_error() -> None:
    server = ScriptedServer(_numbered(), port=0, fail_first=100, fail_status=400)
    with server.running() as base_url:
        (result,) = await _groups(_env(1), CoalescingClient(_client(base_url)), rows=1, per_row=3)
    assert server.api.failures_left == 99  # one request for the three rollouts
    errors = [o["error"] for o in result["outputs"]]
    assert len(errors) == 3 and all(e and "rejected the request" in str(e) for e in errors), errors


async def test_a_cancelled_caller_leaves_the_others_their_replies() -> None:
    coalescer = RequestCoalescer()
    sent: list[int] = []

    async def send(n: int) -> ChatCompletion:
        sent.append(n)
        await asyncio.sleep(0.01)
        return _response(n)

    first = asyncio.ensure_future(coalescer.request("k", send))
    rest = [asyncio.ensure_future(coalescer.request("k", send)) for _ in range(2)]
    await asyncio.sleep(0)
    first.cancel()
    replies = await asyncio.gather(*rest)
    assert sent == [2]
    assert [r.choices[0].message.content for r in replies] == ["c0", "c1"]


def test_only_async_openai_clients_are_wrapped() -> None:
    with pytest.raises(TypeError, match="wraps an AsyncOpenAI client"):
        CoalescingClient(object())
