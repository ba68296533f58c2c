"""The State era's client adapters, accepted so scripts written for 0.3.0 run unmodified.

This SDK talks to models through any OpenAI-compatible async client; an
adapter just wraps one and forwards every attribute to it.
"""

from __future__ import annotations

from typing import Any


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


__all__ = ["OpenAIChatCompletionsClient", "OpenAICompletionsClient"]
