"""The host end of one agent's pipes: JSON lines out, answers matched back to their requests by id."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import subprocess
from typing import Any

from verifiers.sandboxes.errors import SandboxNotRunningError

logger = logging.getLogger("verifiers.sandboxes")

_LINE_LIMIT = 64 * 1024 * 1024  # an answer carries two outputs of up to max_output_bytes, JSON-escaped


class AgentGone(SandboxNotRunningError):
    """The agent's pipe closed: the sandbox was deleted or its agent died."""


class AgentLink:
    """Talks to the agent of a started sandbox process (its stdin and stdout are pipes)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.WriteTransport | None = None
        self._read_transport: asyncio.ReadTransport | None = None
        self._read_task: asyncio.Task[None] | None = None
        self._closed_reason: str | None = None

    async def open(self, timeout: float) -> dict[str, Any]:
        """Connect the pipes and wait for the agent's ready line."""
        loop = asyncio.get_running_loop()
        assert self.process.stdout is not None and self.process.stdin is not None
        self._reader = asyncio.StreamReader(limit=_LINE_LIMIT)
        reader = self._reader
        self._read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                               self.process.stdout)
        self._writer, _ = await loop.connect_write_pipe(asyncio.Protocol, self.process.stdin)
        line = await asyncio.wait_for(self._reader.readline(), timeout)
        if not line:
            raise AgentGone("the sandbox exited before its agent started")
        hello = json.loads(line)
        self._read_task = asyncio.create_task(self._read_loop())
        return hello

    async def _read_loop(self) -> None:
        assert self._reader is not None
        try:
            while line := await self._reader.readline():
                message = json.loads(line)
                future = self._pending.pop(message.get("id"), None)
                if future is not None and not future.done():
                    future.set_result(message)
        except (ValueError, asyncio.LimitOverrunError) as error:  # a corrupt channel is a dead sandbox
            logger.warning("sandbox agent channel broke: %r", error)
        self._fail_all(self._closed_reason or "the sandbox's agent exited")

    def _fail_all(self, reason: str) -> None:
        self._closed_reason = self._closed_reason or reason
        for future in self._pending.values():
            if not future.done():
                future.set_exception(AgentGone(reason))
        self._pending.clear()

    @property
    def alive(self) -> bool:
        return self._closed_reason is None and self._read_task is not None and not self._read_task.done()

    async def call(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send ``request`` and wait up to ``timeout`` for its answer."""
        if not self.alive or self._writer is None:
            raise AgentGone(self._closed_reason or "the sandbox's agent is not running")
        request_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._writer.write((json.dumps({**request, "id": request_id}) + "\n").encode())
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(request_id, None)

    def abort(self, reason: str) -> None:
        """Fail every waiting call with ``reason``; later calls fail the same way."""
        self._fail_all(reason)

    def close(self) -> None:
        """Close the pipes (the agent ends its sandbox when its stdin closes)."""
        self._fail_all("the sandbox was closed")
        for transport in (self._writer, self._read_transport):
            if transport is not None:
                transport.close()
        if self._read_task is not None:
            self._read_task.cancel()


__all__ = ["AgentLink", "AgentGone"]
