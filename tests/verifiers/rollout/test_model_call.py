"""request_model: the low-level post path sends what ``create`` sends and returns what it returns."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai
import pytest
from openai.types import Completion
from openai.types.chat import ChatCompletion

from tests.verifiers.http.conftest import RawServer, raw_server
from verifiers.clients import OpenAIChatCompletionsClient
from verifiers.errors import (
    MalformedModelResponseError,
    ModelError,
    OverlongPromptError,
)
from verifiers.http import make_openai_client
from verifiers.rollout.model_call import (
    RetryPolicy,
    normalize_sampling_args,
    request_model,
)
from verifiers.testing import Reply

_CHAT = {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
         "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}]}
_TEXT = {"id": "t", "object": "text_completion", "created": 0, "model": "m",
         "choices": [{"index": 0, "finish_reason": "stop", "text": "hi", "logprobs": None}]}
_TOOLS = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {}}}}]
_AUDIO = [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AA==", "format": "wav"}}]}]


class Capture:
    """Records each request's target, headers and JSON body; answers with a canned completion."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str], Any]] = []

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer) -> None:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
            body = json.loads(await reader.readexactly(int(headers["content-length"])))
            target = lines[0].split(" ")[1]
            self.seen.append((target, headers, body))
            payload = json.dumps(_TEXT if target.startswith("/v1/completions") else _CHAT).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%b"
                         % (len(payload), payload))


_CASES: list[tuple[str, Any, list | None, dict[str, Any]]] = [
    ("chat", [{"role": "user", "content": "hello"}], None, {}),
    ("chat", [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}], _TOOLS,
     {"temperature": 0.7, "max_tokens": 32, "logprobs": True, "top_logprobs": 2, "seed": None,
      "extra_body": {"return_tokens_as_token_ids": True, "top_k": 5}, "extra_headers": {"X-Trace": "t1"},
      "extra_query": {"api-version": "1"}}),
    ("chat", _AUDIO, None, {"stop": ["\n"], "n": 1}),
    ("completion", "Once upon", None, {"max_tokens": 8, "echo": False, "extra_body": {"min_p": 0.1}}),
]


async def _via_create(client: openai.AsyncOpenAI, kind: str, prompt: Any, tools: list | None,
                      args: dict[str, Any]) -> Any:
    args = normalize_sampling_args(args, kind)
    if kind == "completion":
        return await client.completions.create(model="m", prompt=prompt, **args)
    if tools:
        args["tools"] = tools
    if any(isinstance(m.get("content"), list) for m in prompt):
        args["modalities"] = ["text"]
    return await client.chat.completions.create(model="m", messages=prompt, **args)


@pytest.mark.parametrize(("kind", "prompt", "tools", "sampling"), _CASES)
async def test_the_request_on_the_wire_is_what_create_sends(kind: str, prompt: Any, tools: list | None,
                                                            sampling: dict[str, Any]) -> None:
    capture = Capture()
    async with raw_server(capture) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        before = await _via_create(client, kind, prompt, tools, dict(sampling))
        after = await request_model(client, "m", prompt, tools=tools, sampling_args=dict(sampling), message_type=kind)
        await client.close()
    (target_a, headers_a, body_a), (target_b, headers_b, body_b) = capture.seen
    assert (target_b, body_b) == (target_a, body_a)
    volatile = {"x-stainless-retry-count", "x-stainless-read-timeout"}
    assert {k: v for k, v in headers_b.items() if k not in volatile} == {
        k: v for k, v in headers_a.items() if k not in volatile}
    assert type(after) is type(before) is (Completion if kind == "completion" else ChatCompletion)
    assert after == before


async def test_unknown_sampling_arguments_fail_as_create_fails() -> None:
    client = make_openai_client("http://127.0.0.1:9/v1", api_key="k")
    with pytest.raises(TypeError, match="unexpected keyword argument 'temprature'"):
        await request_model(client, "m", [{"role": "user", "content": "x"}], sampling_args={"temprature": 1})
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        await client.chat.completions.create(model="m", messages=[], temprature=1)  # type: ignore[call-overload]


async def test_the_adapter_and_the_factory_client_take_the_same_path(serve) -> None:
    base_url = serve("reverse")
    for client in (make_openai_client(base_url, api_key="k"),
                   OpenAIChatCompletionsClient(openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0))):
        response = await request_model(client, "m", [{"role": "user", "content": "abc"}])
        assert isinstance(response, ChatCompletion) and response.choices[0].message.content == "cba"


async def test_errors_are_classified_as_before(serve) -> None:
    quick = RetryPolicy(max_retries=1, initial_delay_s=0.01)
    client = make_openai_client(serve("echo", fail_first=5, fail_status=503), api_key="k")
    with pytest.raises(ModelError, match="after 2 attempts"):
        await request_model(client, "m", [{"role": "user", "content": "x"}], retry=quick)
    refused = make_openai_client(serve("echo", fail_first=1, fail_status=400), api_key="k")
    with pytest.raises(ModelError, match="rejected"):
        await request_model(refused, "m", [{"role": "user", "content": "x"}], retry=quick)
    too_long = Reply(status=400, content="This model's maximum context length is 8 tokens")
    overlong = make_openai_client(serve(lambda request: too_long), api_key="k")
    with pytest.raises(OverlongPromptError):
        await request_model(overlong, "m", [{"role": "user", "content": "x"}], retry=quick)


@pytest.mark.parametrize(("body", "kind", "message"), [
    (b"<html>502 Bad Gateway</html>", "chat", "not valid JSON"),
    (b'{"id": "c", "choi', "chat", "not valid JSON"),
    (b"\xff\xfe not utf-8", "chat", "not valid JSON"),
    (b'{"id": "c", "choices": "many"}', "chat", "choices are a str"),
    (b'{"id": "c", "choices": [{"index": 0}]}', "chat", "not a chat message"),
    (b'{"id": "c", "choices": [{"index": 0, "message": {"role": "assistant", "content": 7}}]}', "chat",
     "not a chat message"),
    (b'{"id": "t", "choices": [{"index": 0, "text": null}]}', "completion", "no completion text"),
])
async def test_a_malformed_200_reply_is_a_model_error_and_is_not_retried(serve, body: bytes, kind: str,
                                                                         message: str) -> None:
    asked: list[str] = []

    def broken(request: Any) -> Reply:
        asked.append(request.kind)
        return Reply(raw_body=body)

    client = make_openai_client(serve(broken), api_key="k")
    prompt: Any = [{"role": "user", "content": "x"}] if kind == "chat" else "x"
    with pytest.raises(MalformedModelResponseError, match=message):
        await request_model(client, "m", prompt, message_type=kind, retry=RetryPolicy(max_retries=3))
    assert asked == [kind]  # one attempt: a server that sends garbage is not asked again
    await client.close()


async def test_max_retries_n_means_n_plus_one_attempts(serve) -> None:
    for retries in (0, 2):
        asked: list[int] = []

        def failing(request: Any, asked: list[int] = asked) -> Reply:
            asked.append(1)
            return Reply(status=503)

        client = make_openai_client(serve(failing), api_key="k")
        with pytest.raises(ModelError, match=f"after {retries + 1} attempts"):
            await request_model(client, "m", [{"role": "user", "content": "x"}],
                                retry=RetryPolicy(max_retries=retries, initial_delay_s=0.01))
        assert len(asked) == retries + 1
        await client.close()
