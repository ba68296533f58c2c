"""One call to the model, with the original's argument normalisation and our retry policy.

The OpenAI client already retries connection errors a few times; on top of
that a rollout retries transient failures (5xx, 429, timeouts, dropped
connections) with exponential backoff and jitter, then raises
:class:`~verifiers.errors.ModelError` so the rollout records the error and the
run goes on. A prompt that exceeds the context is not a failure: it raises
:class:`~verifiers.errors.OverlongPromptError` and the rollout just stops.
"""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import dataclass
from typing import Any

import openai

from verifiers.errors import EmptyModelResponseError, ModelError, OverlongPromptError

logger = logging.getLogger("verifiers.rollout")

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


async def _call(client: Any, model: str, prompt: Any, tools: list | None, args: dict[str, Any], message_type: str) -> Any:
    if message_type == "chat":
        if tools:
            args = {**args, "tools": tools}
        if "modalities" not in args and _has_audio(prompt):
            args["modalities"] = ["text"]
        return await client.chat.completions.create(model=model, messages=prompt, **args)
    if tools:
        raise ValueError("tools are not supported with message_type='completion'")
    return await client.completions.create(model=model, prompt=prompt, **args)


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
            if attempt == retry.max_retries:
                raise ModelError(f"model API failed after {attempt + 1} attempts: {error!r}") from error
            delay = retry.delay(attempt)
            logger.debug("transient model API error (%r); retry %d in %.2fs", error, attempt + 1, delay)
            await asyncio.sleep(delay)
            continue
        except openai.APIError as error:
            raise ModelError(f"model API error: {error!r}") from error
        if not getattr(response, "choices", None):
            raise EmptyModelResponseError(f"the model returned no choices (response id {getattr(response, 'id', None)!r})")
        return response
    raise AssertionError("unreachable")  # the loop always returns or raises


__all__ = ["RetryPolicy", "normalize_sampling_args", "request_model"]
