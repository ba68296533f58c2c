"""Compatibility path ``verifiers.utils.response_utils`` (0.1.8-0.1.10): a model response read by hand.

Environments that drive their own model calls (an overridden ``get_model_response``, a judge loop) import
these coroutines to turn a ``ChatCompletion``/``Completion`` into what a rollout records. The real homes
are :func:`verifiers.rollout.response.parse_response` and :func:`verifiers.tokens.step_tokens`; this module
only adds the classic call shapes and ``max_seq_len`` truncation.

>>> import asyncio
>>> response = {"choices": [{"token_ids": [7, 8, 9]}], "prompt_token_ids": [1, 2]}
>>> tokens = asyncio.run(parse_response_tokens(response, "chat", max_seq_len=4))
>>> tokens["completion_ids"], tokens["is_truncated"]
([7, 8], True)
"""

from __future__ import annotations

from typing import Any

from openai.types import Completion
from openai.types.chat import ChatCompletion

from verifiers.messages import to_plain
from verifiers.rollout.response import parse_response
from verifiers.state import TrajectoryStepTokens
from verifiers.tokens.response_tokens import step_tokens
from verifiers.types import Messages, MessageType


def _choices(response: Any) -> list[Any]:
    choices = response.get("choices") if isinstance(response, dict) else getattr(response, "choices", None)
    return list(choices or [])


async def parse_response_messages(response: Any, message_type: MessageType) -> Messages:
    """The reply as a completion: ``[assistant message]`` (a plain dict) for chat, the text for completions.

    A response without choices is an empty reply (``""`` content), as the originals read it.
    """
    if not _choices(response):
        return "" if message_type == "completion" else [{"role": "assistant", "content": ""}]
    if isinstance(response, dict):  # a response read back from JSON: the SDK's own types, validated
        response = (Completion if message_type == "completion" else ChatCompletion).model_validate(response)
    message = parse_response(response, message_type).message
    return message if isinstance(message, str) else [to_plain(message)]


async def parse_response_tokens(
    response: Any, message_type: MessageType, max_seq_len: int | None = None
) -> TrajectoryStepTokens | None:
    """The turn's token ids, masks and logprobs (``None`` when the server sent no token ids).

    With ``max_seq_len``, a prompt longer than it is cut to it and the completion dropped
    (``overlong_prompt``), and a prompt plus completion longer than it loses the completion's tail;
    both set ``is_truncated``. ``message_type`` is accepted for the classic signature: chat and
    completion responses are told apart by their own fields.
    """
    tokens = step_tokens(response)
    if tokens is None:
        return None
    prompt, completion = len(tokens["prompt_ids"]), len(tokens["completion_ids"])
    overlong = max_seq_len is not None and prompt > max_seq_len
    keep = 0 if overlong else None if max_seq_len is None else max(max_seq_len - prompt, 0)
    if overlong:
        assert max_seq_len is not None
        tokens["prompt_ids"] = tokens["prompt_ids"][:max_seq_len]
        tokens["prompt_mask"] = tokens["prompt_mask"][:max_seq_len]
    if keep is not None and keep < completion:
        tokens["completion_ids"] = tokens["completion_ids"][:keep]
        tokens["completion_mask"] = tokens["completion_mask"][:keep]
        tokens["completion_logprobs"] = tokens["completion_logprobs"][:keep]
    tokens["overlong_prompt"] = overlong
    tokens["is_truncated"] = overlong or (keep is not None and keep < completion)
    return tokens


async def parse_is_truncated(response: Any, message_type: MessageType) -> bool:
    """Whether the server stopped the reply at its token limit (``finish_reason == "length"``)."""
    choices = _choices(response)
    if not choices:
        return False
    choice = choices[0]
    reason = choice.get("finish_reason") if isinstance(choice, dict) else getattr(choice, "finish_reason", None)
    return reason == "length"


__all__ = ["parse_is_truncated", "parse_response_messages", "parse_response_tokens"]
