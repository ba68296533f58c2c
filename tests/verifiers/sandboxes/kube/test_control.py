"""The real control path (lightkube) against a stand-in Kubernetes API server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from lightkube import AsyncClient, KubeConfig

from verifiers.http.http11 import encode_response, read_request
from verifiers.sandboxes.kube import Executor, FakeKubeApi, LightkubeApi


def _pod(name: str, ip: str | None, phase: str = "Running", ready: bool = True) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "sbx"},
            "status": {"phase": phase, "podIP": ip,
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


class ApiServer:
    """Answers the two calls the control path makes, and remembers what it was asked."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict]] = []
        self.pods = [_pod("exec-b", "10.0.0.2"), _pod("exec-a", "10.0.0.1"), _pod("exec-c", None, phase="Pending"),
                     _pod("exec-d", "10.0.0.4", ready=False)]

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (request := await read_request(reader)) is not None:
            body = json.loads(request.body) if request.body else {}
            self.requests.append((request.method, request.path, body))
            if request.method == "GET" and request.path == "/api/v1/namespaces/sbx/pods":
                answer = {"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": self.pods}
            else:
                answer = body
            writer.write(encode_response(200, json.dumps(answer).encode(), request.keep_alive))
            await writer.drain()
        writer.close()


@pytest.fixture
async def api_server() -> AsyncIterator[tuple[ApiServer, str]]:
    fake = ApiServer()
    server = await asyncio.start_server(fake.handle, "127.0.0.1", 0)
    yield fake, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    server.close()


async def test_lightkube_lists_ready_executors_and_scales_the_deployment(api_server) -> None:
    fake, url = api_server
    config = KubeConfig.from_dict({
        "clusters": [{"name": "test", "cluster": {"server": url}}],
        "users": [{"name": "trainer", "user": {"token": "t0ken"}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "trainer", "namespace": "sbx"}}],
        "current-context": "test",
    })
    client = AsyncClient(config=config, namespace="sbx", trust_env=False)
    api = LightkubeApi("sbx", "sandbox-executor", {"app": "x"}, port=8080, client=client)
    assert await api.executors() == [Executor("exec-a", "http://10.0.0.1:8080"),
                                     Executor("exec-b", "http://10.0.0.2:8080")]
    await api.scale(5)
    method, path, body = fake.requests[-1]
    assert (method, path) == ("PUT", "/apis/apps/v1/namespaces/sbx/deployments/sandbox-executor/scale")
    assert body["spec"] == {"replicas": 5}
    await client.close()


async def test_the_fake_control_path_records_scaling() -> None:
    api = FakeKubeApi([Executor("a", "http://127.0.0.1:1")])
    await api.scale(3)
    assert api.replicas == 3 and [e.name for e in await api.executors()] == ["a"]
