"""The orchestrator's side of the weight routes: one small async client per inference server.

Admin calls get their own connection, so they never queue behind the many generation requests that the
OpenAI client keeps open on the same server::

    async with WeightsClient("http://127.0.0.1:8000/v1") as weights:
        info = await weights.update("/run/broadcasts/step_3")   # {"version": 1, "weight_dir": ..., "seconds": ...}
        await weights.reload()                                  # back to the base weights
        await weights.healthy(timeout=5.0)                      # True when GET /health answers 200
        await weights.commitments([{"prompt_ids": [...], "completion_ids": [...]}], interval=8, k=8)
"""

from __future__ import annotations

from typing import Any

import aiohttp
import httpx2

from trainer_adapter.inference.errors import InferenceServerError, WeightsFolderError, WeightUpdateError
from trainer_adapter.inference.run_secret import run_secret
from verifiers.http import AioHttpClient


class WeightsClient:
    """``/update_weights``, ``/reload_weights``, ``/weights`` and ``/commitment`` of one server (its ``/v1`` URL or
    its root), with the run secret (``VF_RUN_SECRET``) as the bearer token unless ``api_key`` is given."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout: float = 600.0,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        root = base_url.rstrip("/").removesuffix("/v1")
        token = api_key if api_key is not None else run_secret()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # vLLM closes idle connections after 5 s, and a trainer step is often longer: idle connections are
        # retired after 2 s, before the server drops them (see _call for the race that is left).
        options: dict[str, Any] = {"base_url": root, "headers": headers, "timeout": timeout}
        self._http = (httpx2.AsyncClient(transport=transport, **options) if transport is not None
                      else AioHttpClient(limits=httpx2.Limits(keepalive_expiry=2.0), **options))

    async def update(self, weight_dir: str) -> dict[str, Any]:
        """Load the safetensors folder ``weight_dir`` into the running engine; returns the new version."""
        return await self._call("POST", "/update_weights", {"weight_dir": weight_dir})

    async def reload(self) -> dict[str, Any]:
        """Load the weights the server was started with."""
        return await self._call("POST", "/reload_weights", {})

    async def current(self) -> dict[str, Any]:
        """``{"version", "weight_dir", "base"}``: what the server serves now."""
        return await self._call("GET", "/weights", None)

    async def commitments(self, rollouts: list[dict[str, list[int]]], interval: int, k: int) -> dict[str, Any]:
        """The server's commitments to ``rollouts`` (``prompt_ids``, ``completion_ids``) by its current weights:
        ``{"commitments": [...], "weights_version": n, "weight_dir": folder or None}`` (docs/validation.md)."""
        return await self._call("POST", "/commitment", {"rollouts": rollouts, "interval": interval, "k": k})

    async def healthy(self, timeout: float) -> bool:
        """Whether ``GET /health`` answers 200 within ``timeout`` seconds (False when it cannot be reached)."""
        try:
            response = await self._http.get("/health", timeout=timeout)
        except httpx2.HTTPError:  # refused, reset, timed out: a server that is down or stuck
            return False
        return response.status_code == 200

    async def _call(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        try:
            response = await self._send(method, path, body)
        except httpx2.TransportError as exc:
            raise InferenceServerError(f"{method} {self._http.base_url}{path}: {exc!r}") from exc
        if response.status_code == 200:
            return response.json()
        detail = _error_text(response)
        if response.status_code in (400, 422):
            raise WeightsFolderError(f"{path}: {detail}")
        if response.status_code == 500:
            raise WeightUpdateError(f"{path}: {detail}")
        raise InferenceServerError(f"{method} {path} answered {response.status_code}: {detail}")

    async def _send(self, method: str, path: str, body: dict[str, Any] | None) -> httpx2.Response:
        """The request, sent once more if the server closed its pooled connection as the request went out.

        aiohttp resends only idempotent methods on such a connection, and not POST; these POSTs are
        idempotent (loading the same folder twice is harmless), so one resend is safe.
        """
        try:
            return await self._http.request(method, path, json=body)
        except httpx2.RemoteProtocolError as exc:
            if not isinstance(exc.__cause__, aiohttp.ServerDisconnectedError):
                raise
        return await self._http.request(method, path, json=body)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> WeightsClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _error_text(response: httpx2.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:500]
    return str(data.get("error") or data.get("detail") or data) if isinstance(data, dict) else str(data)


__all__ = ["WeightsClient"]
