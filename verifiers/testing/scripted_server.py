"""A real OpenAI-compatible HTTP server on 127.0.0.1 whose "model" is a scripted policy.

It exercises everything a client meets on the wire (connection pools, keep-alive,
status codes, retries, timeouts, JSON shapes) without a model, and answers in
microseconds, so a benchmark against it measures the client::

    server = ScriptedServer(policy="reverse", port=0)
    with server.running() as base_url:              # a daemon thread with its own event loop
        client = openai.OpenAI(base_url=base_url, api_key="x")
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "abc"}])
        # -> content "cba"

Inside async code, ``async with server.serving() as base_url`` runs it on the
current loop instead. As a process: ``vf-scripted-server --policy reverse --port 0``
prints ``READY <base_url>`` once listening. Policies: :mod:`verifiers.testing.policies`.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from verifiers.errors import UsageError
from verifiers.http.http11 import MAX_HEADER_BYTES, HttpError, encode_response, read_request
from verifiers.testing.openai_api import ScriptedApi, error_body
from verifiers.testing.policies import Policy, ScriptedRequest, resolve_policy
from verifiers.tokens.byte_tokenizer import ByteTokenizer

# Many clients open hundreds of connections at once; the default backlog (100) would reset some.
_BACKLOG = 4096


class ScriptedServer:
    """An OpenAI-compatible server answering with a policy; see the module docstring.

    Args:
        policy: a callable ``(ScriptedRequest) -> Reply | str`` or a built-in spec such as ``"reverse:0.2"``.
        port: 0 picks a free port; read it from ``base_url`` once started.
        delay_s: wait this long before every generation answer (client timeout tests).
        fail_first: answer the first N generation requests with ``fail_status`` (retry tests).
        tokenizer: tokenizes prompts and replies for token ids and logprobs (default: ChatML bytes).
    """

    def __init__(
        self,
        policy: str | Policy = "echo",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        model: str = "scripted",
        delay_s: float = 0.0,
        fail_first: int = 0,
        fail_status: int = 503,
        tokenizer: ByteTokenizer | None = None,
    ) -> None:
        if delay_s < 0 or fail_first < 0:
            raise UsageError("delay_s and fail_first must be >= 0")
        if not 400 <= fail_status < 600:
            raise UsageError(f"fail_status must be an HTTP error status, got {fail_status}")
        self.host = host
        self.port = port
        self.tokenizer = tokenizer or ByteTokenizer()
        self.api = ScriptedApi(resolve_policy(policy), self.tokenizer, model, delay_s, fail_first, fail_status)
        self.requests_served = 0
        """HTTP responses written so far (all routes and statuses)."""
        self.base_url = ""
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None

    @property
    def policy_errors(self) -> int:
        """Requests whose policy raised (answered with 500 and logged)."""
        return self.api.policy_errors

    @property
    def recent_requests(self) -> list[ScriptedRequest]:
        """The last 256 generation requests, oldest first (to check what a client sent)."""
        return list(self.api.recent_requests)

    # -- in the current event loop ------------------------------------------------------

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """Serve on the running event loop for the duration of the block; yields ``base_url``."""
        await self._open()
        try:
            yield self.base_url
        finally:
            await self._close()

    async def _open(self) -> None:
        if self._server is not None:
            raise UsageError("the scripted server is already running")
        _raise_open_file_limit()
        self._server = await asyncio.start_server(
            self._serve_connection, self.host, self.port, backlog=_BACKLOG, limit=MAX_HEADER_BYTES
        )
        port = self._server.sockets[0].getsockname()[1]
        self.base_url = f"http://{self.host}:{port}/v1"

    async def _close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        await server.wait_closed()

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while True:
                try:
                    request = await read_request(reader)
                except HttpError as e:
                    body = json.dumps(error_body(e.status, str(e))).encode()
                    writer.write(encode_response(e.status, body, keep_alive=False))
                    self.requests_served += 1
                    break
                if request is None:
                    break
                status, payload = await self.api.handle(request)
                body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                writer.write(encode_response(status, body, request.keep_alive))
                self.requests_served += 1
                await writer.drain()
                if not request.keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client hung up (e.g. its own timeout fired); nothing to answer
        except asyncio.CancelledError:
            # Shutdown: end quietly, since Python 3.11's stream callback reports a cancelled handler as an error.
            pass
        finally:
            self._connections.discard(task)
            writer.close()

    # -- in a background thread ---------------------------------------------------------

    @contextmanager
    def running(self) -> Iterator[str]:
        """Serve from a daemon thread for the duration of the block; yields ``base_url``."""
        base_url = self.start()
        try:
            yield base_url
        finally:
            self.stop()

    def start(self) -> str:
        """Start serving from a daemon thread; returns ``base_url`` once listening."""
        if self._thread is not None:
            raise UsageError("the scripted server is already running")
        started = threading.Event()
        failure: list[BaseException] = []

        def main() -> None:
            try:
                asyncio.run(self._serve_until_stopped(started))
            except BaseException as e:  # handed to the starting thread, which re-raises it
                failure.append(e)
                started.set()

        self._thread = threading.Thread(target=main, name="scripted-server", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            self._thread = None
            raise failure[0]
        return self.base_url

    def stop(self) -> None:
        """Stop the background server and wait for its thread (idempotent)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        thread.join(timeout=10)

    async def _serve_until_stopped(self, started: threading.Event) -> None:
        self._stop = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        async with self.serving():
            started.set()
            await self._stop.wait()


def _raise_open_file_limit() -> None:
    """Lift the soft limit on open files to the hard one.

    A client and this server in one process hold two descriptors per connection,
    so 1,000 connections already pass the common soft limit of 1,024.
    """
    try:
        import resource
    except ImportError:  # not POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 16
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):  # best effort: the old limit still serves fewer connections
            pass


__all__ = ["ScriptedServer"]
