"""openai's aiohttp client, with aiohttp's failures raised as the httpx2 errors httpx's own transport raises.

openai's ``DefaultAioHttpClient`` maps every aiohttp connection error to ``ConnectTimeout`` (so a refused
connection or an unknown host reaches the user as ``APITimeoutError('Request timed out.')``), and leaves
some aiohttp errors unmapped (a malformed status line escapes the OpenAI client as aiohttp's own
``ClientResponseError``). :class:`AioHttpClient` corrects both, so that the OpenAI client raises
``APIConnectionError`` with the real reason, and a rollout retries it as transient.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import aiohttp
import httpx2
from openai import DefaultAioHttpClient


class _MappedErrors(httpx2.AsyncBaseTransport):
    """Wraps openai's aiohttp transport: its exceptions change, and each event loop gets a transport of its own.

    An aiohttp session belongs to the loop that first used it; a client made once and used from successive
    ``asyncio.run`` calls (``env.evaluate_sync`` twice) gets a fresh transport, and so a fresh pool, per loop.
    """

    def __init__(self, make_inner: Callable[[], httpx2.AsyncBaseTransport]) -> None:
        self._make_inner = make_inner
        self._inner = make_inner()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            if self._loop is not None:  # the old pool's connections died with their loop
                self._inner = self._make_inner()
            self._loop = loop
        try:
            return await self._inner.handle_async_request(request)
        except httpx2.ConnectTimeout as exc:
            cause = exc.__cause__
            if isinstance(cause, aiohttp.ClientConnectorError):  # refused, unknown host, TLS failure
                raise httpx2.ConnectError(str(cause), request=request) from cause
            if isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(cause, TimeoutError):
                raise httpx2.RemoteProtocolError(str(cause), request=request) from cause  # e.g. server disconnected
            raise
        except aiohttp.ClientError as exc:
            raise httpx2.RemoteProtocolError(str(exc), request=request) from exc

    async def aclose(self) -> None:
        await self._inner.aclose()


class AioHttpClient(DefaultAioHttpClient):
    """``openai.DefaultAioHttpClient`` (same arguments) whose transports raise httpx2's errors faithfully."""

    def _init_transport(self, *args: Any, **kwargs: Any) -> httpx2.AsyncBaseTransport:
        return _MappedErrors(lambda: super(AioHttpClient, self)._init_transport(*args, **kwargs))

    def _init_proxy_transport(self, *args: Any, **kwargs: Any) -> httpx2.AsyncBaseTransport:
        return _MappedErrors(lambda: super(AioHttpClient, self)._init_proxy_transport(*args, **kwargs))


__all__ = ["AioHttpClient"]
