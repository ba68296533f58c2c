"""One call to the model, with the original's argument normalisation and our retry policy.

The OpenAI client already retries connection errors a few times; on top of
that a rollout retries transient failures (5xx, 429, timeouts, dropped
connections) with exponential backoff and jitter, then raises
:class:`~verifiers.errors.ModelError` so the rollout records the error and the
run goes on. A prompt that exceeds the context is not a failure: it raises
:class:`~verifiers.errors.OverlongPromptError` and the rollout just stops. A 200 reply
that is not JSON, or not shaped like a completion, raises
:class:`~verifiers.errors.MalformedModelResponseError` (recorded the same way, not retried).

An ``AsyncOpenAI`` client is called through its low-level ``client.post(...)``
with a plain JSON body (as 0.3.0 does): the same request on the wire, the same
response types and errors as ``chat.completions.create``, without the SDK's
per-request transform of the messages, which cost about an eighth of a rollout's
CPU (``docs/benchmarks.md``). Streaming requests and other clients use ``create``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import openai
from openai.resources.chat.completions import AsyncCompletions as _AsyncChatCompletions
from openai.resources.completions import AsyncCompletions as _AsyncCompletions
from openai.types import Completion
from openai.types.chat import ChatCompletion

from verifiers.clients import CoalescingClient, OpenAIChatCompletionsClient
from verifiers.errors import (
    EmptyModelResponseError,
    MalformedModelResponseError,
    ModelError,
    OverlongPromptError,
    ReplyTooLargeError,
)
from verifiers.rollout.coalesce import RequestCoalescer, merge_key

if TYPE_CHECKING:
    from openai._types import RequestOptions

logger = logging.getLogger("verifiers.rollout")
E = TypeVar("E", bound=BaseException)

_TRANSIENT = (
    openai.APIConnectionError,  # includes APITimeoutError
    openai.InternalServerError,
    openai.RateLimitError,
)
_OVERLONG_MARKERS = ("maximum context length", "context length", "too many tokens", "prompt is too long")


@dataclass(frozen=True)
class RetryPolicy:
    """How a rollout retries transient model API failures."""

    max_retries: int = 3
    initial_delay_s: float = 0.5
    max_delay_s: float = 8.0

    def delay(self, attempt: int) -> float:
        base = min(self.max_delay_s, self.initial_delay_s * (2**attempt))
        return base * (0.5 + random.random() / 2)


def normalize_sampling_args(sampling_args: dict[str, Any] | None, message_type: str) -> dict[str, Any]:
    """Apply the original's rules: drop ``None`` values; chat mode says ``max_completion_tokens``."""
    args = {k: v for k, v in (sampling_args or {}).items() if v is not None}
    if message_type == "chat" and "max_tokens" in args:
        args.setdefault("max_completion_tokens", args.pop("max_tokens"))
        args.pop("max_tokens", None)
    if "extra_body" in args and not args["extra_body"]:
        del args["extra_body"]
    return args


def _has_audio(prompt: Any) -> bool:
    for message in prompt if isinstance(prompt, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(
            str(part.get("type", "")).startswith("input_audio") for part in content if isinstance(part, dict)
        ):
            return True
    return False


def _is_overlong(error: openai.BadRequestError) -> bool:
    text = str(error).lower()
    return any(marker in text for marker in _OVERLONG_MARKERS)


def _create_parameters(create: Any) -> frozenset[str]:
    return frozenset(name for name in inspect.signature(create).parameters if name != "self")


_CHAT_PARAMETERS = _create_parameters(_AsyncChatCompletions.create)
_COMPLETION_PARAMETERS = _create_parameters(_AsyncCompletions.create)
_UNSET = (openai.NotGiven, getattr(openai, "Omit", openai.NotGiven))


def _create_security() -> RequestOptions:
    """``create`` authenticates with the bearer key only (newer ``openai``); ``post``'s default adds admin keys."""
    try:
        from openai._types import RequestOptions
    except ImportError:  # an openai without per-request security options
        return {}
    return {"security": {"bearer_auth": True}} if "security" in RequestOptions.__annotations__ else {}


_SECURITY = _create_security()


async def _post(client: openai.AsyncOpenAI, path: str, cast_to: type, parameters: frozenset[str],
                given: dict[str, Any], args: dict[str, Any]) -> Any:
    """What ``create(**given, **args)`` sends and returns, through ``client.post``: same body, options, type, errors."""
    # create() refuses these before sending anything; so do we.
    if twice := given.keys() & args.keys():
        raise TypeError(f"create() got multiple values for keyword argument {min(twice)!r}")
    if unknown := args.keys() - parameters:
        raise TypeError(f"create() got an unexpected keyword argument {min(unknown)!r}")
    body = {**given, **{k: v for k, v in args.items() if not isinstance(v, _UNSET)}}
    options = _SECURITY.copy()
    if (extra_headers := body.pop("extra_headers", None)) is not None:
        options["headers"] = extra_headers
    if (extra_query := body.pop("extra_query", None)) is not None:
        options["params"] = extra_query
    if (extra_body := body.pop("extra_body", None)) is not None:
        options["extra_json"] = extra_body
    if "timeout" in body:
        options["timeout"] = body.pop("timeout")
    return await client.post(path, body=body, options=options, cast_to=cast_to)


async def _send(client: openai.AsyncOpenAI, coalescer: RequestCoalescer | None, path: str, cast_to: type,
                parameters: frozenset[str], given: dict[str, Any], args: dict[str, Any]) -> Any:
    """``_post``, merged with identical concurrent requests when the client coalesces."""
    key = merge_key(path, {**given, **args}) if coalescer is not None else None
    if coalescer is None or key is None:
        return await _post(client, path, cast_to, parameters, given, args)
    return await coalescer.request(
        key, lambda n: _post(client, path, cast_to, parameters, given, args if n == 1 else {**args, "n": n}))


def _async_openai(client: Any) -> openai.AsyncOpenAI | None:
    if isinstance(client, (OpenAIChatCompletionsClient, CoalescingClient)):
        client = client.client
    return client if isinstance(client, openai.AsyncOpenAI) else None


async def _call(client: Any, model: str, prompt: Any, tools: list | None, args: dict[str, Any],
                message_type: str) -> Any:
    direct = None if args.get("stream") else _async_openai(client)
    coalescer = client.coalescer if isinstance(client, CoalescingClient) else None
    if message_type == "chat":
        if tools:
            args = {**args, "tools": tools}
        if "modalities" not in args and _has_audio(prompt):
            args["modalities"] = ["text"]
        if direct is not None:
            return await _send(direct, coalescer, "/chat/completions", ChatCompletion, _CHAT_PARAMETERS,
                               {"model": model, "messages": prompt}, args)
        return await client.chat.completions.create(model=model, messages=prompt, **args)
    if tools:
        raise ValueError("tools are not supported with message_type='completion'")
    if direct is not None:
        return await _send(direct, coalescer, "/completions", Completion, _COMPLETION_PARAMETERS,
                           {"model": model, "prompt": prompt}, args)
    return await client.completions.create(model=model, prompt=prompt, **args)


def _cause(error: BaseException, kind: type[E]) -> E | None:
    """The first exception of ``kind`` in ``error``'s chain of causes (the OpenAI client wraps transport errors)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def check_response_shape(response: Any, message_type: str) -> None:
    """Raise unless ``response`` looks like a completion a rollout can read.

    The OpenAI client builds its response objects without validating them, and returns plain
    text when the body is not JSON; either would otherwise fail later, outside the error tree.

    Raises:
        EmptyModelResponseError: the reply has no choices.
        MalformedModelResponseError: the reply is text, or its choices are not completions.
    """
    if isinstance(response, (str, bytes)):
        raise MalformedModelResponseError(f"the model API replied with text, not JSON: {response[:200]!r}")
    choices = getattr(response, "choices", None)
    if not choices:
        raise EmptyModelResponseError(f"the model returned no choices (response id {getattr(response, 'id', None)!r})")
    if not isinstance(choices, list):
        raise MalformedModelResponseError(f"the model API's choices are a {type(choices).__name__}, not a list")
    first = choices[0]
    if message_type == "chat":
        message = getattr(first, "message", None)
        content = getattr(message, "content", None)
        tool_calls = getattr(message, "tool_calls", None)
        well_typed = isinstance(content, (str, type(None))) and isinstance(tool_calls, (list, type(None)))
        if message is None or not well_typed:
            raise MalformedModelResponseError(f"the model API's first choice is not a chat message: {first!r:.200}")
    elif not isinstance(getattr(first, "text", None), str):
        raise MalformedModelResponseError(f"the model API's first choice has no completion text: {first!r:.200}")


async def request_model(
    client: Any,
    model: str,
    prompt: Any,
    *,
    tools: list | None = None,
    sampling_args: dict[str, Any] | None = None,
    message_type: str = "chat",
    retry: RetryPolicy = RetryPolicy(),
) -> Any:
    """Ask the model for one response; retry transient failures, classify the rest.

    Raises:
        OverlongPromptError: the prompt does not fit the model's context.
        ModelError: the API kept failing after ``retry.max_retries`` retries, or refused the request.
        MalformedModelResponseError: the API answered 200 with a body that is not a completion.
    """
    args = normalize_sampling_args(sampling_args, message_type)
    for attempt in range(retry.max_retries + 1):
        try:
            response = await _call(client, model, prompt, tools, args, message_type)
        except openai.BadRequestError as error:
            if _is_overlong(error):
                raise OverlongPromptError(str(error)) from error
            raise ModelError(f"the model API rejected the request: {error}") from error
        except _TRANSIENT as error:
            too_large = _cause(error, ReplyTooLargeError)
            if too_large is not None:  # the same request would get the same reply: not transient
                raise ReplyTooLargeError(str(too_large)) from error
            if attempt == retry.max_retries:
                raise ModelError(f"model API failed after {attempt + 1} attempts: {error!r}") from error
            delay = retry.delay(attempt)
            logger.debug("transient model API error (%r); retry %d in %.2fs", error, attempt + 1, delay)
            await asyncio.sleep(delay)
            continue
        except ReplyTooLargeError:
            raise  # read outside the client's send (a streamed reply)
        except openai.APIError as error:
            raise ModelError(f"model API error: {error!r}") from error
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            # What the OpenAI client lets through when a 200 says JSON and the body is not.
            raise MalformedModelResponseError(f"the model API's reply is not valid JSON: {error}") from error
        check_response_shape(response, message_type)
        return response
    raise AssertionError("unreachable")  # the loop always returns or raises


__all__ = ["RetryPolicy", "check_response_shape", "normalize_sampling_args", "request_model"]
