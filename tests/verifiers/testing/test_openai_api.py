"""Response shapes of the scripted API, called without sockets."""

from __future__ import annotations

import json
from typing import Any

import pytest

from verifiers.http.http11 import HttpRequest
from verifiers.testing import ByteTokenizer, Reply
from verifiers.testing.openai_api import ScriptedApi, pseudo_logprob


def api(policy: Any = lambda r: Reply(r.last_user_text), **kwargs: Any) -> ScriptedApi:
    return ScriptedApi(policy, ByteTokenizer(), "scripted", **kwargs)


async def post(api_: ScriptedApi, path: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return await api_.handle(HttpRequest("POST", path, headers or {}, raw, True))


def chat(text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], **extra}


def test_pseudo_logprobs_are_deterministic_and_in_range():
    values = [pseudo_logprob(t, p) for t in range(263) for p in range(50)]
    assert all(-5 < v <= 0 for v in values)
    assert len(set(values)) > 1000
    assert pseudo_logprob(7, 3) == pseudo_logprob(7, 3)


async def test_usage_counts_bytes_without_token_ids():
    status, body = await post(api(), "/v1/chat/completions", chat("héllo"))
    assert status == 200
    assert body["usage"] == {"prompt_tokens": 6, "completion_tokens": 7, "total_tokens": 13}
    assert "prompt_token_ids" not in body and "token_ids" not in body["choices"][0]


async def test_truncation_inside_a_multibyte_character_decodes_with_replacement():
    _, body = await post(api(), "/v1/chat/completions", chat("é!", max_tokens=1, return_token_ids=True))
    choice = body["choices"][0]
    assert choice["token_ids"] == [0xC3] and choice["message"]["content"] == "\ufffd"
    assert choice["finish_reason"] == "length"


async def test_truncated_tool_calls_become_partial_text():
    call = {"function": {"name": "f", "arguments": {"x": 1}}}
    _, body = await post(api(lambda r: Reply("", tool_calls=[call])), "/v1/chat/completions", chat(max_tokens=4))
    message = body["choices"][0]["message"]
    assert message["content"] == "<tool_call>\n{\"" and "tool_calls" not in message


async def test_tool_calls_are_normalised():
    call = {"function": {"name": "f", "arguments": {"x": 1}}}
    _, body = await post(api(lambda r: Reply("thinking", tool_calls=[call])), "/v1/chat/completions", chat())
    message = body["choices"][0]["message"]
    assert message["content"] == "thinking"
    assert message["tool_calls"] == [
        {"id": "call_0", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
    ]
    assert body["choices"][0]["finish_reason"] == "tool_calls"


async def test_completion_logprobs_zero_means_no_alternatives():
    _, body = await post(api(), "/v1/completions", {"model": "m", "prompt": ["ab"], "logprobs": 0})
    logprobs = body["choices"][0]["logprobs"]
    assert logprobs["tokens"] == ["a", "b"] and logprobs["top_logprobs"] is None
    _, body = await post(api(), "/v1/completions", {"model": "m", "prompt": "ab"})
    assert body["choices"][0]["logprobs"] is None


async def test_prompt_token_ids_include_tools():
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    _, body = await post(api(), "/v1/chat/completions", chat(tools=tools, return_token_ids=True))
    expected = ByteTokenizer().apply_chat_template(chat()["messages"], tools=tools, add_generation_prompt=True)
    assert body["prompt_token_ids"] == expected


async def test_sampling_params_reach_the_policy():
    seen = []
    _, _ = await post(api(lambda r: seen.append(r) or "ok"), "/v1/chat/completions",
                      chat(temperature=0.3, extra_field=1), headers={"x-test": "1"})
    (request,) = seen
    assert request.sampling == {"temperature": 0.3, "extra_field": 1}
    assert request.headers == {"x-test": "1"} and request.kind == "chat" and request.model == "m"


async def test_fail_first_counts_only_generation_requests():
    scripted = api(fail_first=1, fail_status=502)
    assert (await scripted.handle(HttpRequest("GET", "/v1/models", {}, b"", True)))[0] == 200
    status, body = await post(scripted, "/v1/chat/completions", chat())
    assert status == 502 and body["error"]["type"] == "server_error"
    assert (await post(scripted, "/v1/chat/completions", chat()))[0] == 200


async def test_error_replies_carry_their_content_as_the_message():
    overlong = "This model's maximum context length is 8 tokens."
    status, body = await post(api(lambda r: Reply(overlong, status=400)), "/v1/chat/completions", chat())
    assert status == 400 and body["error"]["message"] == overlong


async def test_bad_delay_header_is_ignored():
    assert (await post(api(), "/v1/chat/completions", chat(), headers={"x-scripted-delay": "soon"}))[0] == 200


@pytest.mark.parametrize("policy_result", [42, None])
async def test_policies_must_return_a_reply_or_text(policy_result):
    scripted = api(lambda r: policy_result)
    status, body = await post(scripted, "/v1/chat/completions", chat())
    assert status == 500 and "must return a Reply" in body["error"]["message"]
    assert scripted.policy_errors == 1


@pytest.mark.parametrize(
    "body, message",
    [
        (b"\xff\xfe", "not valid JSON"),
        ({"model": "m", "messages": ["not a dict"]}, "messages"),
        ({"model": "m"}, "messages"),
        (chat(max_completion_tokens="many"), "max_tokens"),
    ],
)
async def test_bad_bodies_are_400(body, message):
    status, payload = await post(api(), "/v1/chat/completions", body)
    assert status == 400 and message in payload["error"]["message"]


async def test_a_raw_body_reply_is_sent_as_it_is():
    status, body = await post(api(lambda r: Reply(raw_body=b"<html>oops</html>")), "/v1/chat/completions", chat())
    assert (status, body) == (200, b"<html>oops</html>")
