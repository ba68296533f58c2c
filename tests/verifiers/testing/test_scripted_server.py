"""ScriptedServer against the real OpenAI clients, in a thread, in the test's loop, and as a process."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest

from verifiers.errors import UsageError
from verifiers.testing import ByteTokenizer, Reply, ScriptedRequest, ScriptedServer

ROOT = Path(__file__).resolve().parents[3]
USER = [{"role": "user", "content": "hello"}]
ADD_TOOL = {"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}}


@pytest.fixture(scope="module")
def reverse_url():
    with ScriptedServer(policy="reverse").running() as base_url:
        yield base_url


@pytest.fixture
def sync_client(reverse_url):
    with openai.OpenAI(base_url=reverse_url, api_key="x", max_retries=0) as client:
        yield client


def test_chat_with_the_sync_client(sync_client):
    response = sync_client.chat.completions.create(model="m", messages=USER)
    choice = response.choices[0]
    assert choice.message.content == "olleh" and choice.finish_reason == "stop"
    assert response.model == "m"
    assert response.usage is not None and response.usage.completion_tokens == len("olleh") + 1  # + <|im_end|>


def test_models_and_health(sync_client, reverse_url):
    assert [m.id for m in sync_client.models.list()] == ["scripted"]
    assert httpx.get(reverse_url.removesuffix("/v1") + "/health").json() == {"status": "ok"}


async def test_async_client_against_a_server_in_the_same_loop():
    server = ScriptedServer(policy="echo")
    async with server.serving() as base_url:
        async with openai.AsyncOpenAI(base_url=base_url, api_key="x") as client:
            response = await client.chat.completions.create(model="m", messages=USER)
    assert response.choices[0].message.content == "hello"
    assert server.requests_served == 1
    assert server.recent_requests[0].messages == USER


def test_token_ids_and_logprobs_come_from_the_byte_tokenizer(sync_client):
    response = sync_client.chat.completions.create(
        model="m", messages=USER, logprobs=True, top_logprobs=3,
        extra_body={"return_token_ids": True, "return_tokens_as_token_ids": True},
    )
    tok = ByteTokenizer()
    choice = response.choices[0]
    expected = tok.encode("olleh") + [tok.eos_token_id]
    assert choice.token_ids == expected  # type: ignore[attr-defined]
    prompt_ids = response.prompt_token_ids  # type: ignore[attr-defined]
    assert prompt_ids == tok.apply_chat_template(USER, add_generation_prompt=True)
    entries = choice.logprobs.content
    assert [e.token for e in entries] == [f"token_id:{i}" for i in expected]
    assert all(-5 < e.logprob <= 0 for e in entries)
    assert all(len(e.top_logprobs) == 3 and e.top_logprobs[0].logprob == e.logprob for e in entries)
    assert response.usage.prompt_tokens == len(response.prompt_token_ids)  # type: ignore[attr-defined]
    again = sync_client.chat.completions.create(model="m", messages=USER, logprobs=True)
    assert [e.logprob for e in again.choices[0].logprobs.content] == [e.logprob for e in entries]
    assert again.choices[0].logprobs.content[0].token == "o"


def test_completions_endpoint(sync_client):
    response = sync_client.completions.create(
        model="m", prompt="abc", logprobs=2, extra_body={"return_token_ids": True, "return_tokens_as_token_ids": True}
    )
    choice = response.choices[0]
    assert choice.text == "cba" and choice.finish_reason == "stop"
    assert choice.token_ids == [99, 98, 97]  # type: ignore[attr-defined]
    assert response.prompt_token_ids == [97, 98, 99]  # type: ignore[attr-defined]
    assert choice.logprobs.tokens == ["token_id:99", "token_id:98", "token_id:97"]
    assert len(choice.logprobs.token_logprobs) == 3 and all(len(t) == 2 for t in choice.logprobs.top_logprobs)
    assert choice.logprobs.text_offset == [0, 1, 2]


def test_max_tokens_truncates_with_finish_reason_length(sync_client):
    chat = sync_client.chat.completions.create(model="m", messages=USER, max_completion_tokens=3,
                                               extra_body={"return_token_ids": True})
    assert chat.choices[0].message.content == "oll" and chat.choices[0].finish_reason == "length"
    assert chat.choices[0].token_ids == [111, 108, 108]  # type: ignore[attr-defined]
    assert chat.usage.completion_tokens == 3
    legacy = sync_client.chat.completions.create(model="m", messages=USER, max_tokens=5)
    assert legacy.choices[0].message.content == "olleh" and legacy.choices[0].finish_reason == "length"
    text = sync_client.completions.create(model="m", prompt="abcdef", max_tokens=2)
    assert text.choices[0].text == "fe" and text.choices[0].finish_reason == "length"


def test_stop_strings_cut_the_reply(sync_client):
    response = sync_client.chat.completions.create(model="m", messages=[{"role": "user", "content": "ab</x>cd"}],
                                                   stop=["c>", "d"])
    assert response.choices[0].message.content == ""
    response = sync_client.chat.completions.create(model="m", messages=[{"role": "user", "content": "xyz"}], stop="x")
    assert response.choices[0].message.content == "zy"


async def test_tool_calls_round_trip():
    server = ScriptedServer(policy="tools")
    async with server.serving() as base_url, openai.AsyncOpenAI(base_url=base_url, api_key="x") as client:
        messages: list = [{"role": "user", "content": "add 2 and 3"}]
        first = await client.chat.completions.create(model="m", messages=messages, tools=[ADD_TOOL])
        choice = first.choices[0]
        assert choice.finish_reason == "tool_calls" and choice.message.content is None
        (call,) = choice.message.tool_calls
        assert (call.id, call.type, call.function.name) == ("call_0", "function", "add")
        assert json.loads(call.function.arguments) == {"a": 2, "b": 3}
        messages += [choice.message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": "5"}]
        second = await client.chat.completions.create(model="m", messages=messages, tools=[ADD_TOOL])
    assert second.choices[0].message.content == "5" and second.choices[0].finish_reason == "stop"


async def test_async_policies_and_reply_fields():
    async def policy(request: ScriptedRequest) -> Reply:
        await asyncio.sleep(0)
        return Reply("partial", finish_reason="length")

    async with ScriptedServer(policy=policy).serving() as base_url, \
            openai.AsyncOpenAI(base_url=base_url, api_key="x") as client:
        response = await client.chat.completions.create(model="m", messages=USER)
    assert response.choices[0].message.content == "partial" and response.choices[0].finish_reason == "length"


def test_5xx_then_success_with_the_clients_own_retries():
    server = ScriptedServer(policy="reverse", fail_first=2, fail_status=503)
    with server.running() as base_url:
        with openai.OpenAI(base_url=base_url, api_key="x", max_retries=2) as client:
            response = client.chat.completions.create(model="m", messages=USER)
    assert response.choices[0].message.content == "olleh"
    assert server.requests_served == 3


def test_fault_without_retries_raises_the_status(sync_client):
    with pytest.raises(openai.InternalServerError) as info:
        sync_client.chat.completions.create(model="m", messages=USER, extra_headers={"X-Scripted-Fault": "500"})
    assert info.value.status_code == 500 and "scripted fault" in info.value.message
    with pytest.raises(openai.RateLimitError):
        sync_client.chat.completions.create(model="m", messages=USER, extra_headers={"X-Scripted-Fault": "429"})
    with pytest.raises(openai.BadRequestError, match="400-599"):
        sync_client.chat.completions.create(model="m", messages=USER, extra_headers={"X-Scripted-Fault": "200"})


def test_policy_status_and_errors_become_http_errors():
    def policy(request: ScriptedRequest) -> Reply:
        if request.last_user_text == "boom":
            raise RuntimeError("policy bug")
        return Reply(status=404)

    server = ScriptedServer(policy=policy)
    with server.running() as base_url, openai.OpenAI(base_url=base_url, api_key="x", max_retries=0) as client:
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model="m", messages=USER)
        with pytest.raises(openai.InternalServerError, match="policy bug"):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "boom"}])
    assert server.policy_errors == 1


def test_timeouts_leave_the_server_serving(sync_client):
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        sync_client.with_options(timeout=0.2).chat.completions.create(
            model="m", messages=USER, extra_headers={"X-Scripted-Delay": "2"}
        )
    assert time.monotonic() - started < 1.5
    assert sync_client.chat.completions.create(model="m", messages=USER).choices[0].message.content == "olleh"


def test_server_wide_delay():
    with ScriptedServer(policy="echo", delay_s=0.3).running() as base_url:
        with openai.OpenAI(base_url=base_url, api_key="x", max_retries=0, timeout=0.1) as client:
            with pytest.raises(openai.APITimeoutError):
                client.chat.completions.create(model="m", messages=USER)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n": 0}, "n must be an integer from 1 to 128"),
        ({"n": 129}, "n must be"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"messages": []}, "messages"),
        ({"extra_body": {"stream": True}}, "stream"),
        ({"tools": {"not": "a list"}}, "tools"),
    ],
)
def test_bad_chat_requests_are_400s(sync_client, kwargs, match):
    args = {"model": "m", "messages": USER, **kwargs}
    with pytest.raises(openai.BadRequestError, match=match) as info:
        sync_client.chat.completions.create(**args)
    assert info.value.body["type"] == "invalid_request_error"  # type: ignore[index]


def test_n_replies_ask_the_policy_n_times_in_one_request():
    calls: list[int] = []

    def counting(request: ScriptedRequest) -> str:
        calls.append(1)
        return f"reply {len(calls)}"

    with ScriptedServer(policy=counting).running() as base_url:
        with openai.OpenAI(base_url=base_url, api_key="x", max_retries=0) as client:
            chat = client.chat.completions.create(model="m", messages=USER, n=3, logprobs=True,
                                                  extra_body={"return_token_ids": True})
            text = client.completions.create(model="m", prompt="hi", n=2)
    assert [c.message.content for c in chat.choices] == ["reply 1", "reply 2", "reply 3"]
    assert [c.index for c in chat.choices] == [0, 1, 2]
    ids = [c.token_ids for c in chat.choices]  # type: ignore[attr-defined]
    assert chat.usage is not None and chat.usage.completion_tokens == sum(len(i) for i in ids)
    assert all(len(c.logprobs.content) == len(i) for c, i in zip(chat.choices, ids))  # type: ignore[union-attr]
    assert [c.text for c in text.choices] == ["reply 4", "reply 5"]


def test_bad_completion_prompt_is_400(sync_client):
    with pytest.raises(openai.BadRequestError, match="prompt"):
        sync_client.completions.create(model="m", prompt=[1, 2, 3])


def test_malformed_json_unknown_paths_and_methods(reverse_url):
    with httpx.Client(base_url=reverse_url) as http:
        bad = http.post("/chat/completions", content=b"{not json", headers={"content-type": "application/json"})
        assert bad.status_code == 400 and "not valid JSON" in bad.json()["error"]["message"]
        assert http.post("/chat/completions", json=[1]).status_code == 400
        assert http.get("/nowhere").status_code == 404
        assert http.get("/chat/completions").status_code == 405


@pytest.mark.slow
async def test_500_concurrent_requests_complete():
    server = ScriptedServer(policy="reverse")
    async with server.serving() as base_url:
        # openai's default connect timeout (5 s) is the client's, not the server's: 500 connects at once in this
        # process, beside the server's thread and a busy CI machine, once took longer (ConnectTimeout)
        async with openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0, timeout=120) as client:
            texts = [f"request {i}" for i in range(500)]
            responses = await asyncio.gather(*(
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": t}]) for t in texts
            ))
    assert [r.choices[0].message.content for r in responses] == [t[::-1] for t in texts]
    assert server.requests_served == 500


def test_lifecycle_errors():
    server = ScriptedServer()
    with server.running():
        with pytest.raises(UsageError, match="already running"):
            server.start()
        with pytest.raises(OSError):
            ScriptedServer(port=int(server.base_url.rsplit(":", 1)[1].split("/")[0])).start()
    server.stop()  # idempotent
    with pytest.raises(UsageError):
        ScriptedServer(fail_status=200)
    with pytest.raises(UsageError):
        ScriptedServer(delay_s=-1)


def _start_cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "verifiers.cli.vf_scripted_server", *args], cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.mark.slow
def test_cli_serves_until_sigterm():
    process = _start_cli("--policy", "reverse", "--port", "0", "--fail-first", "1", "--fail-status", "503")
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("READY http://127.0.0.1:"), line + (process.stderr.read() if process.stderr else "")
        base_url = line.split()[1]
        with openai.OpenAI(base_url=base_url, api_key="x", max_retries=0) as client:
            with pytest.raises(openai.InternalServerError):
                client.chat.completions.create(model="m", messages=USER)
            assert client.chat.completions.create(model="m", messages=USER).choices[0].message.content == "olleh"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.slow
def test_cli_rejects_bad_options():
    process = _start_cli("--policy", "bogus")
    _, err = process.communicate(timeout=30)
    assert process.returncode == 2 and "unknown policy" in err
