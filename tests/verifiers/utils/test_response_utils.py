"""``verifiers.utils.response_utils``: the 0.1.8-0.1.10 helpers, on real OpenAI response objects."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types import Completion
from openai.types.chat import ChatCompletion

from verifiers.utils.response_utils import parse_is_truncated, parse_response_messages, parse_response_tokens


def chat(content: str | None = "4", tool_calls: list[dict[str, Any]] | None = None, finish: str = "stop",
         **extra: Any) -> ChatCompletion:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish, **extra.pop("choice", {})}
    return ChatCompletion.model_validate({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                                          "choices": [choice], **extra})


VLLM_FIELDS: dict[str, Any] = {
    "prompt_token_ids": [1, 2, 3],
    "choice": {"token_ids": [10, 11, 12, 13],
               "logprobs": {"content": [{"token": t, "logprob": -0.5 * i, "bytes": None, "top_logprobs": []}
                                        for i, t in enumerate("abcd")]}},
}


async def test_a_chat_reply_is_one_plain_assistant_message() -> None:
    assert await parse_response_messages(chat("the sum is 4"), "chat") == [
        {"role": "assistant", "content": "the sum is 4"}
    ]


async def test_tool_calls_come_back_as_plain_dicts() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
    [message] = await parse_response_messages(chat(None, tool_calls=[call]), "chat")
    assert message["content"] == "" and json.loads(json.dumps(message)) == message  # JSON-plain
    assert message["tool_calls"][0]["function"] == call["function"] and message["tool_calls"][0]["id"] == "call_1"


async def test_a_completion_reply_is_its_text_and_an_empty_response_is_empty() -> None:
    completion = Completion.model_validate({"id": "x", "object": "text_completion", "created": 0, "model": "m",
                                            "choices": [{"index": 0, "text": " 42", "finish_reason": "length"}]})
    assert await parse_response_messages(completion, "completion") == " 42"
    assert await parse_is_truncated(completion, "completion") is True
    empty = ChatCompletion.model_validate({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                                           "choices": []})
    assert await parse_response_messages(empty, "chat") == [{"role": "assistant", "content": ""}]
    assert await parse_is_truncated(empty, "chat") is False


async def test_a_response_read_back_from_json_parses_the_same() -> None:
    response = chat("hi")
    from_json = await parse_response_messages(response.model_dump(), "chat")
    assert from_json == await parse_response_messages(response, "chat")


async def test_tokens_come_from_the_servers_extra_fields() -> None:
    tokens = await parse_response_tokens(chat(**VLLM_FIELDS), "chat")
    assert tokens is not None
    assert tokens["prompt_ids"] == [1, 2, 3] and tokens["prompt_mask"] == [0, 0, 0]
    assert tokens["completion_ids"] == [10, 11, 12, 13] and tokens["completion_mask"] == [1, 1, 1, 1]
    assert tokens["completion_logprobs"] == [0.0, -0.5, -1.0, -1.5]
    assert (tokens["overlong_prompt"], tokens["is_truncated"]) == (False, False)


async def test_without_token_ids_there_are_no_tokens() -> None:
    assert await parse_response_tokens(chat(), "chat") is None


@pytest.mark.parametrize(("max_seq_len", "prompt", "completion", "overlong", "truncated"), [
    (7, [1, 2, 3], [10, 11, 12, 13], False, False),  # exactly fits
    (5, [1, 2, 3], [10, 11], False, True),  # the completion's tail goes
    (3, [1, 2, 3], [], False, True),  # the prompt alone fills it
    (2, [1, 2], [], True, True),  # the prompt itself is cut, the completion dropped
])
async def test_max_seq_len_cuts_the_completion_then_the_prompt(
        max_seq_len: int, prompt: list[int], completion: list[int], overlong: bool, truncated: bool) -> None:
    tokens = await parse_response_tokens(chat(**VLLM_FIELDS), "chat", max_seq_len=max_seq_len)
    assert tokens is not None
    assert tokens["prompt_ids"] == prompt and tokens["prompt_mask"] == [0] * len(prompt)
    assert tokens["completion_ids"] == completion and len(tokens["completion_logprobs"]) == len(completion)
    assert tokens["completion_mask"] == [1] * len(completion)
    assert (tokens["overlong_prompt"], tokens["is_truncated"]) == (overlong, truncated)


async def test_the_token_limit_is_what_truncation_means() -> None:
    assert await parse_is_truncated(chat(finish="length"), "chat") is True
    assert await parse_is_truncated(chat(finish="stop"), "chat") is False
