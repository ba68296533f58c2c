"""The State era's client adapters, accepted so scripts written for 0.3.0 run unmodified.

This SDK talks to models through any OpenAI-compatible async client; an
adapter just wraps one and forwards every attribute to it.
"""

from __future__ import annotations

from typing import Any

from verifiers.rollout.coalesce import RequestCoalescer


class OpenAIChatCompletionsClient:
    """Wraps an ``AsyncOpenAI`` (or ``OpenAI``) client; behaves exactly like it.

    >>> from openai import AsyncOpenAI
    >>> client = OpenAIChatCompletionsClient(AsyncOpenAI(base_url="http://127.0.0.1:8000/v1", api_key="x"))
    """

    def __init__(self, client: Any) -> None:
        self.client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


class OpenAICompletionsClient(OpenAIChatCompletionsClient):
    """The completions-API flavour of the adapter (the same forwarding)."""


class CoalescingClient:
    """An ``AsyncOpenAI`` client whose identical requests sent at the same moment go out as one, with ``n`` replies.

    The rollouts of a group ask the same first question together; merged, the server pays its per-request
    cost and the prefill once (:mod:`verifiers.rollout.coalesce` says when requests are merged and why the
    replies are the same draws). For servers that support ``n`` (vLLM, OpenAI); the RL orchestrator uses one
    per inference server. Everything else is the wrapped client's.

    >>> from openai import AsyncOpenAI
    >>> client = CoalescingClient(AsyncOpenAI(base_url="http://127.0.0.1:8000/v1", api_key="x"))
    """

    def __init__(self, client: Any, window: int = 3) -> None:
        from openai import AsyncOpenAI

        if not isinstance(client, AsyncOpenAI):
            raise TypeError(f"CoalescingClient wraps an AsyncOpenAI client, not {type(client).__name__}")
        self.client = client
        self.coalescer = RequestCoalescer(window)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


__all__ = ["CoalescingClient", "OpenAIChatCompletionsClient", "OpenAICompletionsClient"]
