"""The sandbox seam: what every backend (local, Kubernetes) provides.

The client (:class:`~verifiers.sandboxes.client.AsyncSandboxClient`) adds
conveniences on top (local files, text decoding, bulk calls); a backend only
has to do the primitive operations, in sandbox paths and bytes.
"""

from __future__ import annotations

import abc

from verifiers.sandboxes.models import CommandResponse, CreateSandboxRequest, Sandbox


class SandboxBackend(abc.ABC):
    """Creates, runs and removes sandboxes. Every method is safe to call concurrently."""

    name: str = "abstract"

    @abc.abstractmethod
    async def create(self, request: CreateSandboxRequest, idempotency_key: str | None = None) -> Sandbox:
        """Start creating a sandbox and return at once (status PENDING or RUNNING).

        A second call with the same ``idempotency_key`` returns the first call's
        sandbox instead of creating another.
        """

    @abc.abstractmethod
    async def wait_ready(self, sandbox_id: str, timeout: float) -> Sandbox:
        """Wait until the sandbox runs; raise SandboxTimeoutError or the creation's error."""

    @abc.abstractmethod
    async def get(self, sandbox_id: str) -> Sandbox:
        """The sandbox's current record; SandboxNotRunningError for an unknown id."""

    @abc.abstractmethod
    async def list(self, labels: list[str] | None = None) -> list[Sandbox]:
        """Live sandboxes (PENDING or RUNNING), those carrying every one of ``labels`` if given."""

    @abc.abstractmethod
    async def execute(self, sandbox_id: str, command: str, *, timeout: float, working_dir: str | None = None,
                      env: dict[str, str] | None = None) -> CommandResponse:
        """Run ``command`` with ``bash -c`` in the sandbox; kill it and all it started after ``timeout`` seconds."""

    @abc.abstractmethod
    async def write_file(self, sandbox_id: str, path: str, data: bytes) -> None:
        """Create or replace the file at sandbox ``path`` (parents are created)."""

    @abc.abstractmethod
    async def read_file(self, sandbox_id: str, path: str, max_bytes: int) -> bytes:
        """The bytes of the file at sandbox ``path``; SandboxFileTooLargeError above ``max_bytes``."""

    @abc.abstractmethod
    async def delete(self, sandbox_id: str) -> None:
        """Kill everything in the sandbox and remove it. Deleting a deleted sandbox is a no-op."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Delete every sandbox this backend created and release its resources."""

    @abc.abstractmethod
    def close_sync(self) -> None:
        """:meth:`close` for places without an event loop: ``atexit`` and signal handlers."""


__all__ = ["SandboxBackend"]
