"""openai's aiohttp client, with aiohttp's failures raised as the httpx2 errors httpx's own transport raises.

openai's ``DefaultAioHttpClient`` maps every aiohttp connection error to ``ConnectTimeout`` (so a refused
connection or an unknown host reaches the user as ``APITimeoutError('Request timed out.')``), and leaves
some aiohttp errors unmapped (a malformed status line escapes the OpenAI client as aiohttp's own
``ClientResponseError``). :class:`AioHttpClient` corrects both, so that the OpenAI client raises
``APIConnectionError`` with the real reason, and a rollout retries it as transient.

It also bounds what one reply may cost: a body over ``max_response_bytes`` (by its ``Content-Length``, or
as it arrives) raises :class:`~verifiers.errors.ReplyTooLargeError` once the limit is passed, so a server that
answers with 50 MB of text costs a counted rollout error, not the memory and results file it would fill.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import httpx2
from openai import DefaultAioHttpClient

from verifiers.errors import ReplyTooLargeError


class _MappedErrors(httpx2.AsyncBaseTransport):
    """Wraps openai's aiohttp transport: its exceptions change, and each event loop gets a transport of its own.

    An aiohttp session belongs to the loop that first used it; a client made once and used from successive
    ``asyncio.run`` calls (``env.evaluate_sync`` twice) gets a fresh transport, and so a fresh pool, per loop.
    """

    def __init__(self, make_inner: Callable[[], httpx2.AsyncBaseTransport], max_response_bytes: int | None) -> None:
        self._make_inner = make_inner
        self._max_response_bytes = max_response_bytes
        self._inner = make_inner()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            if self._loop is not None:  # the old pool's connections died with their loop
                self._inner = self._make_inner()
            self._loop = loop
        try:
            response = await self._inner.handle_async_request(request)
        except httpx2.ConnectTimeout as exc:
            cause = exc.__cause__
            if isinstance(cause, aiohttp.ClientConnectorError):  # refused, unknown host, TLS failure
                raise httpx2.ConnectError(str(cause), request=request) from cause
            if isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(cause, TimeoutError):
                raise httpx2.RemoteProtocolError(str(cause), request=request) from cause  # e.g. server disconnected
            raise
        except aiohttp.ClientError as exc:
            raise httpx2.RemoteProtocolError(str(exc), request=request) from exc
        if self._max_response_bytes is not None:
            response.stream = _CappedStream(response, self._max_response_bytes)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CappedStream(httpx2.AsyncByteStream):
    """A response body that raises once more than ``limit`` bytes are announced or have arrived."""

    def __init__(self, response: httpx2.Response, limit: int) -> None:
        self._inner = response.stream
        self._limit = limit
        self._announced = response.headers.get("content-length", "")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._announced.isdigit() and int(self._announced[:20]) > self._limit:
            raise ReplyTooLargeError(f"the model API's reply is {self._announced[:20]} bytes, over the "
                                     f"{self._limit:,} allowed (max_reply_bytes)")
        received = 0
        async for chunk in self._inner:  # type: ignore[union-attr]
            received += len(chunk)
            if received > self._limit:
                raise ReplyTooLargeError(f"the model API's reply passed the {self._limit:,} bytes allowed "
                                         "(max_reply_bytes)")
            yield chunk

    async def aclose(self) -> None:
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            await close()


class AioHttpClient(DefaultAioHttpClient):
    """``openai.DefaultAioHttpClient`` (same arguments, and ``max_response_bytes``: a reply's largest body,
    ``None`` for no limit) whose transports raise httpx2's errors faithfully."""

    def __init__(self, *args: Any, max_response_bytes: int | None = None, **kwargs: Any) -> None:
        self._max_response_bytes = max_response_bytes  # read by _init_transport, which __init__ calls
        super().__init__(*args, **kwargs)

    def _init_transport(self, *args: Any, **kwargs: Any) -> httpx2.AsyncBaseTransport:
        return _MappedErrors(lambda: super(AioHttpClient, self)._init_transport(*args, **kwargs),
                             self._max_response_bytes)

    def _init_proxy_transport(self, *args: Any, **kwargs: Any) -> httpx2.AsyncBaseTransport:
        return _MappedErrors(lambda: super(AioHttpClient, self)._init_proxy_transport(*args, **kwargs),
                             self._max_response_bytes)


__all__ = ["AioHttpClient"]
