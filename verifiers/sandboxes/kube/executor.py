"""The executor pod's server: a sandbox backend (the local one) behind a small authenticated JSON API.

Each executor pod runs ``python -m verifiers.sandboxes.kube.executor``; the trainer's
:class:`~verifiers.sandboxes.kube.backend.KubernetesBackend` talks to it directly
(pod IP, no API server in the data path). Every route but ``GET /healthz`` needs
``Authorization: Bearer <pod_token(key, pod name)>``; a wrong token gets 401.
Files travel base64-encoded in JSON.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError

from verifiers.errors import SandboxError
from verifiers.http.http11 import MAX_HEADER_BYTES, HttpError, HttpRequest, encode_response, read_request
from verifiers.sandboxes.backend import SandboxBackend
from verifiers.sandboxes.kube.wire import API, error_body, pod_token
from verifiers.sandboxes.models import CreateSandboxRequest

logger = logging.getLogger("verifiers.sandboxes.kube")


class ExecutorServer:
    """Serves ``backend`` on ``host:port`` to clients holding ``token``."""

    def __init__(self, backend: SandboxBackend, token: str, host: str = "0.0.0.0", port: int = 8080) -> None:
        self.backend, self.host, self.port = backend, host, port
        self._expected = f"Bearer {token}".encode()
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """Serve on the running loop for the block; yields the base URL."""
        self._server = await asyncio.start_server(self._connection, self.host, self.port, limit=MAX_HEADER_BYTES)
        port = self._server.sockets[0].getsockname()[1]
        try:
            yield f"http://{self.host}:{port}"
        finally:
            self._server.close()
            for writer in list(self._writers):  # idle keep-alive connections end their handlers cleanly
                writer.close()
            await self._server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                try:
                    request = await read_request(reader)
                except HttpError as error:
                    writer.write(encode_response(error.status, json.dumps({"error": "HttpError"}).encode(), False))
                    break
                if request is None:
                    break
                status, payload = await self._answer(request)
                writer.write(encode_response(status, json.dumps(payload).encode(), request.keep_alive))
                await writer.drain()
                if not request.keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _answer(self, request: HttpRequest) -> tuple[int, Any]:
        if request.method == "GET" and request.path == "/healthz":
            return 200, {"ok": True}
        if not hmac.compare_digest(request.headers.get("authorization", "").encode(), self._expected):
            return 401, {"error": "Unauthorized", "message": "missing or wrong bearer token"}
        try:
            body = json.loads(request.body) if request.body else {}
        except ValueError:
            return 400, {"error": "ValueError", "message": "the body is not JSON"}
        if not isinstance(body, dict):
            return 400, {"error": "ValueError", "message": "the body must be a JSON object"}
        try:
            return 200, await self._route(request.method, request.path, body)
        except (SandboxError, ValueError) as error:
            if isinstance(error, ValidationError):
                return 400, {"error": "ValueError", "message": str(error)}
            return error_body(error)
        except KeyError as missing:
            return 400, {"error": "ValueError", "message": f"missing field {missing}"}
        except LookupError:
            return 404, {"error": "NotFound", "message": f"no route {request.method} {request.path}"}

    async def _route(self, method: str, path: str, body: dict[str, Any]) -> Any:
        parts = path.removeprefix(API).strip("/").split("/") if path.startswith(API) else None
        if parts is None:
            raise LookupError(path)
        backend = self.backend
        if method == "POST" and parts == [""]:
            request = CreateSandboxRequest.model_validate(body["request"])
            return (await backend.create(request, body.get("idempotency_key"))).model_dump(mode="json")
        if method == "POST" and parts == ["list"]:
            return [s.model_dump(mode="json") for s in await backend.list(body.get("labels"))]
        sandbox_id, action = parts[0], parts[1] if len(parts) > 1 else ""
        if method == "GET" and action == "":
            return (await backend.get(sandbox_id)).model_dump(mode="json")
        if method == "DELETE" and action == "":
            await backend.delete(sandbox_id)
            return {}
        if method == "POST" and action == "wait":
            return (await backend.wait_ready(sandbox_id, float(body["timeout"]))).model_dump(mode="json")
        if method == "POST" and action == "exec":
            response = await backend.execute(sandbox_id, body["command"], timeout=float(body["timeout"]),
                                             working_dir=body.get("working_dir"), env=body.get("env"))
            return response.model_dump(mode="json")
        if method == "PUT" and action == "file":
            await backend.write_file(sandbox_id, body["path"], base64.b64decode(body["data"]))
            return {}
        if method == "POST" and action == "file":
            data = await backend.read_file(sandbox_id, body["path"], int(body["max_bytes"]))
            return {"data": base64.b64encode(data).decode()}
        raise LookupError(path)


app = typer.Typer(add_completion=False, help="Serve sandboxes to KubernetesBackend clients (one per executor pod).")


@app.command()
def serve(
    key_file: Path = typer.Option(..., help="File holding the shared key that pod tokens derive from (a Secret)."),
    pod_name: str = typer.Option(..., envvar="POD_NAME", help="This pod's name (downward API); names its token."),
    port: int = typer.Option(8080, help="Port to listen on."),
    root_dir: Path = typer.Option(Path("/var/lib/verifiers/sandboxes"), help="Where the pod's sandboxes live."),
) -> None:
    from verifiers.sandboxes.local.backend import LocalBackend
    from verifiers.sandboxes.local.config import LocalBackendConfig

    token = pod_token(key_file.read_text().strip(), pod_name)

    async def run() -> None:
        backend = LocalBackend(LocalBackendConfig(root_dir=root_dir))
        await backend.start()
        async with ExecutorServer(backend, token, port=port).serving() as url:
            print(f"READY {url}", flush=True)
            await asyncio.Event().wait()

    asyncio.run(run())


if __name__ == "__main__":
    app()


__all__ = ["ExecutorServer", "app"]
