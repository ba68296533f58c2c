"""``AsyncSandboxClient``: the calls public environments already make, over any backend.

The method names and arguments follow the hosted sandbox client environments
are written against, so code like this runs unchanged, on this machine::

    from verifiers.sandboxes import AsyncSandboxClient, CreateSandboxRequest

    async with AsyncSandboxClient() as sandboxes:
        box = await sandboxes.create(CreateSandboxRequest(name="demo", labels=["exp-1"]))
        await sandboxes.wait_for_creation(box.id)
        result = await sandboxes.execute_command(box.id, "python3 -c 'print(6 * 7)'", timeout=10)
        print(result.stdout, result.exit_code)
        await sandboxes.delete(box.id)

Without a ``backend`` the client uses the local backend (one per event loop,
shared by every client in it).
"""

from __future__ import annotations

import asyncio
import builtins
import weakref
from pathlib import Path

from verifiers.sandboxes.backend import SandboxBackend
from verifiers.sandboxes.errors import CommandTimeoutError, SandboxError
from verifiers.sandboxes.models import CommandResponse, CreateSandboxRequest, FileContent, Sandbox

DEFAULT_COMMAND_TIMEOUT_S = 300.0
DEFAULT_READY_TIMEOUT_S = 120.0
DEFAULT_MAX_FILE_BYTES = 100 * 1024 * 1024

_defaults: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, SandboxBackend] = weakref.WeakKeyDictionary()


def default_backend() -> SandboxBackend:
    """The running event loop's local backend (created on first use)."""
    from verifiers.sandboxes.local.backend import LocalBackend

    loop = asyncio.get_running_loop()
    if loop not in _defaults:
        _defaults[loop] = LocalBackend()
    return _defaults[loop]


class AsyncSandboxClient:
    """Create sandboxes, run commands in them, move files in and out, delete them.

    Args:
        backend: where sandboxes run; default: the local backend.
    """

    def __init__(self, backend: SandboxBackend | None = None) -> None:
        self._backend = backend

    @property
    def backend(self) -> SandboxBackend:
        """The given backend, or the running event loop's local one (so a client outlives its loops)."""
        return self._backend if self._backend is not None else default_backend()

    async def __aenter__(self) -> AsyncSandboxClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Release the client. Sandboxes live on until deleted or their lifetime ends."""

    # -- lifecycle ----------------------------------------------------------------------------

    async def create(self, request: CreateSandboxRequest, idempotency_key: str | None = None) -> Sandbox:
        """Ask for a sandbox and return at once (PENDING); a repeated ``idempotency_key`` returns the same one."""
        return await self.backend.create(request, idempotency_key)

    async def wait_for_creation(self, sandbox_id: str, timeout: float = DEFAULT_READY_TIMEOUT_S) -> Sandbox:
        """Wait until the sandbox runs (SandboxTimeoutError after ``timeout`` seconds)."""
        return await self.backend.wait_ready(sandbox_id, timeout)

    async def bulk_wait_for_creation(self, sandbox_ids: list[str],
                                     timeout: float = DEFAULT_READY_TIMEOUT_S) -> list[Sandbox]:
        """:meth:`wait_for_creation` for many at once."""
        return list(await asyncio.gather(*(self.backend.wait_ready(i, timeout) for i in sandbox_ids)))

    async def get(self, sandbox_id: str) -> Sandbox:
        """The sandbox's current record."""
        return await self.backend.get(sandbox_id)

    async def list(self, labels: list[str] | None = None) -> list[Sandbox]:
        """Live sandboxes, only those carrying every label in ``labels`` if given."""
        return await self.backend.list(labels)

    async def delete(self, sandbox_id: str) -> None:
        """Kill everything in the sandbox and remove it (deleting twice is fine)."""
        await self.backend.delete(sandbox_id)

    # builtins.list: below the method list(), the bare name means the method here
    async def bulk_delete(self, sandbox_ids: builtins.list[str] | None = None,
                          labels: builtins.list[str] | None = None) -> builtins.list[str]:
        """Delete the given sandboxes, or every live one carrying all ``labels``; returns the ids deleted."""
        if (sandbox_ids is None) == (labels is None):
            raise ValueError("bulk_delete takes sandbox_ids or labels, exactly one of them")
        ids = sandbox_ids if sandbox_ids is not None else [s.id for s in await self.backend.list(labels)]
        if labels is not None and not labels:
            raise ValueError("bulk_delete(labels=[]) would delete every sandbox; pass at least one label")
        await asyncio.gather(*(self.backend.delete(i) for i in ids))
        return list(ids)

    # -- commands -----------------------------------------------------------------------------

    async def execute_command(self, sandbox_id: str, command: str, working_dir: str | None = None,
                              env: dict[str, str] | None = None, timeout: float | None = None, *,
                              raise_on_timeout: bool = True) -> CommandResponse:
        """Run ``command`` with bash in the sandbox and return its output and exit code.

        Waits for the sandbox to be ready first. After ``timeout`` seconds (default
        300) the command and everything it started are killed; then
        CommandTimeoutError is raised (its ``response`` holds the output so far), or
        with ``raise_on_timeout=False`` the response is returned with ``timed_out=True``.
        A command killed for memory returns ``oom_killed=True`` and exit code 137.
        """
        seconds = DEFAULT_COMMAND_TIMEOUT_S if timeout is None else float(timeout)
        if seconds <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        response = await self.backend.execute(sandbox_id, command, timeout=seconds, working_dir=working_dir, env=env)
        if response.timed_out and raise_on_timeout:
            raise CommandTimeoutError(f"command timed out after {seconds:g} s", response=response, timeout=seconds)
        return response

    # -- files --------------------------------------------------------------------------------

    async def upload_bytes(self, sandbox_id: str, file_path: str, file_bytes: bytes) -> None:
        """Write ``file_bytes`` to ``file_path`` (below /workspace or /tmp; relative means /workspace)."""
        await self.backend.write_file(sandbox_id, file_path, bytes(file_bytes))

    async def upload_file(self, sandbox_id: str, file_path: str, local_file_path: str | Path) -> None:
        """Copy the local file ``local_file_path`` to ``file_path`` in the sandbox."""
        data = await asyncio.to_thread(Path(local_file_path).read_bytes)
        await self.upload_bytes(sandbox_id, file_path, data)

    async def download_file(self, sandbox_id: str, file_path: str, local_file_path: str | Path,
                            max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> None:
        """Copy ``file_path`` from the sandbox to ``local_file_path`` (SandboxFileTooLargeError over ``max_bytes``)."""
        data = await self.backend.read_file(sandbox_id, file_path, max_bytes)
        await asyncio.to_thread(Path(local_file_path).write_bytes, data)

    async def read_file(self, sandbox_id: str, file_path: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES,
                        encoding: str = "utf-8") -> FileContent:
        """The text of ``file_path`` (undecodable bytes replaced)."""
        data = await self.backend.read_file(sandbox_id, file_path, max_bytes)
        return FileContent(path=file_path, content=data.decode(encoding, errors="replace"), size=len(data))


__all__ = ["AsyncSandboxClient", "default_backend", "SandboxError"]
