"""``KubernetesBackend``: sandboxes spread over executor pods, reached directly over HTTP.

A sandbox id is ``<pod name>--<id in that pod>``, so any process holding the
key can route a call without shared state. New sandboxes go round-robin to
the ready executors the control path lists (refreshed every ``refresh_s``).
The same client calls work on this backend as on the local one; the contract
test suite runs against both.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import time
from typing import Any

import httpx

from verifiers.sandboxes.backend import SandboxBackend
from verifiers.sandboxes.errors import SandboxNotRunningError, SandboxUnavailableError
from verifiers.sandboxes.kube.control import Executor, KubeApi
from verifiers.sandboxes.kube.wire import API, pod_token, raise_error
from verifiers.sandboxes.models import CommandResponse, CreateSandboxRequest, Sandbox

_SEP = "--"
_MARGIN_S = 30.0  # HTTP timeout beyond the command's own


class KubernetesBackend(SandboxBackend):
    """Sandboxes in executor pods.

    Args:
        api: the control path (lists executors).
        master_key: the key the executors' tokens derive from (the Secret they mount).
        refresh_s: how long a listing of executors is trusted.
    """

    name = "kubernetes"

    def __init__(self, api: KubeApi, master_key: str, refresh_s: float = 10.0) -> None:
        self.api, self._key, self.refresh_s = api, master_key, refresh_s
        self._executors: dict[str, Executor] = {}
        self._listed_at = 0.0
        self._turn = itertools.count()
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(60.0, connect=5.0))

    # -- routing ------------------------------------------------------------------------------

    async def _refresh(self, force: bool = False) -> list[Executor]:
        if force or time.monotonic() - self._listed_at > self.refresh_s:
            self._executors = {e.name: e for e in await self.api.executors()}
            self._listed_at = time.monotonic()
        return list(self._executors.values())

    async def _executor(self, pod: str) -> Executor:
        if pod not in self._executors:
            await self._refresh(force=True)
        if pod not in self._executors:
            raise SandboxNotRunningError(f"executor pod {pod} is gone, and its sandboxes with it")
        return self._executors[pod]

    @staticmethod
    def _split(sandbox_id: str) -> tuple[str, str]:
        pod, sep, local = sandbox_id.rpartition(_SEP)
        if not sep or not pod:
            raise SandboxNotRunningError(f"sandbox {sandbox_id} does not exist (not an id of this backend)")
        return pod, local

    async def _call(self, executor: Executor, method: str, path: str, body: dict[str, Any] | None = None,
                    timeout: float | None = None) -> Any:
        headers = {"authorization": f"Bearer {pod_token(self._key, executor.name)}"}
        try:
            response = await self._http.request(method, executor.url + API + path, json=body or {}, headers=headers,
                                                timeout=None if timeout is None else timeout + _MARGIN_S)
        except httpx.HTTPError as error:
            raise SandboxNotRunningError(f"executor {executor.name} unreachable: {error!r}") from None
        payload = response.json()
        if response.status_code == 401:
            raise SandboxUnavailableError(f"executor {executor.name} refused our token (wrong key?)")
        if response.status_code != 200:
            raise_error(payload)
        return payload

    def _global(self, pod: str, record: dict[str, Any]) -> Sandbox:
        sandbox = Sandbox.model_validate(record)
        sandbox.id = f"{pod}{_SEP}{sandbox.id}"
        return sandbox

    async def _on_sandbox(self, sandbox_id: str, method: str, action: str, body: dict[str, Any] | None = None,
                          timeout: float | None = None) -> tuple[str, Any]:
        pod, local = self._split(sandbox_id)
        return pod, await self._call(await self._executor(pod), method, f"/{local}{action}", body, timeout)

    # -- the SandboxBackend API ---------------------------------------------------------------

    async def create(self, request: CreateSandboxRequest, idempotency_key: str | None = None) -> Sandbox:
        if request.image_dir is not None:  # a path on this host means nothing on an executor pod's node
            raise SandboxUnavailableError("the Kubernetes backend cannot mount image_dir (a host path): bake the "
                                          "repository into docker_image, or upload it with upload_bytes")
        executors = await self._refresh()
        if not executors:
            raise SandboxUnavailableError("no executor pod is ready")
        # A retried create must reach the pod that saw the first one: its key picks the pod.
        turn = int(hashlib.sha256(idempotency_key.encode()).hexdigest(), 16) if idempotency_key else next(self._turn)
        executor = executors[turn % len(executors)]
        body = {"request": request.model_dump(mode="json"), "idempotency_key": idempotency_key}
        return self._global(executor.name, await self._call(executor, "POST", "/", body))

    async def wait_ready(self, sandbox_id: str, timeout: float) -> Sandbox:
        pod, record = await self._on_sandbox(sandbox_id, "POST", "/wait", {"timeout": timeout}, timeout)
        return self._global(pod, record)

    async def get(self, sandbox_id: str) -> Sandbox:
        pod, record = await self._on_sandbox(sandbox_id, "GET", "")
        return self._global(pod, record)

    async def list(self, labels: list[str] | None = None) -> list[Sandbox]:
        executors = await self._refresh()
        answers = await asyncio.gather(*(self._call(e, "POST", "/list", {"labels": labels}) for e in executors))
        return [self._global(e.name, r) for e, records in zip(executors, answers, strict=True) for r in records]

    async def execute(self, sandbox_id: str, command: str, *, timeout: float, working_dir: str | None = None,
                      env: dict[str, str] | None = None) -> CommandResponse:
        body = {"command": command, "timeout": timeout, "working_dir": working_dir, "env": env}
        _, record = await self._on_sandbox(sandbox_id, "POST", "/exec", body, timeout)
        return CommandResponse.model_validate(record)

    async def write_file(self, sandbox_id: str, path: str, data: bytes) -> None:
        await self._on_sandbox(sandbox_id, "PUT", "/file", {"path": path, "data": base64.b64encode(data).decode()})

    async def read_file(self, sandbox_id: str, path: str, max_bytes: int) -> bytes:
        _, answer = await self._on_sandbox(sandbox_id, "POST", "/file", {"path": path, "max_bytes": max_bytes})
        return base64.b64decode(answer["data"])

    async def delete(self, sandbox_id: str) -> None:
        await self._on_sandbox(sandbox_id, "DELETE", "")

    async def close(self) -> None:
        """Close the connections (sandboxes belong to their pods and end with their lifetime or a delete)."""
        await self._http.aclose()

    def close_sync(self) -> None:
        """Nothing to do in-process: the pods own the sandboxes (their lifetimes bound a crashed trainer)."""


__all__ = ["KubernetesBackend"]
