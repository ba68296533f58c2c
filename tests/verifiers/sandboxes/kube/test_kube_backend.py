"""The Kubernetes backend beyond the contract suite: tokens, routing across pods, the executor process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from sandbox_fleets import kube_fleet

from verifiers.sandboxes import (
    AsyncSandboxClient,
    CreateSandboxRequest,
    SandboxNotRunningError,
    SandboxUnavailableError,
)
from verifiers.sandboxes.kube import Executor, FakeKubeApi, KubernetesBackend, pod_token


async def test_sandboxes_spread_over_pods_and_route_by_id(sandbox_root: Path) -> None:
    async with kube_fleet(sandbox_root / "spread") as kube:
        client = AsyncSandboxClient(kube)
        boxes = [await client.create(CreateSandboxRequest(labels=["k"])) for _ in range(4)]
        assert sorted(b.id.split("--")[0] for b in boxes) == ["pod-a", "pod-a", "pod-b", "pod-b"]
        outputs = [(await client.execute_command(b.id, "hostname; pwd")).stdout for b in boxes]
        assert outputs == ["sandbox\n/workspace\n"] * 4
        assert sorted(s.id for s in await client.list(labels=["k"])) == sorted(b.id for b in boxes)
        again = await client.create(CreateSandboxRequest(), idempotency_key="same")
        retries = [await client.create(CreateSandboxRequest(), idempotency_key="same") for _ in range(3)]
        assert {r.id for r in retries} == {again.id}  # the key picks the pod, the pod keeps the key
        with pytest.raises(SandboxNotRunningError, match="pod-z is gone"):
            await client.execute_command("pod-z--sbx-1", "true")
        await client.bulk_delete(labels=["k"])
        await client.delete(again.id)


async def test_a_wrong_key_is_refused_by_every_executor(sandbox_root: Path) -> None:
    async with kube_fleet(sandbox_root / "auth", key="right") as kube:
        executors = await kube.api.executors()
        impostor = KubernetesBackend(FakeKubeApi(executors), "wrong")
        try:
            with pytest.raises(SandboxUnavailableError, match="refused our token"):
                await impostor.create(CreateSandboxRequest())
        finally:
            await impostor.close()
        url = executors[0].url
        async with httpx.AsyncClient() as http:
            assert (await http.get(url + "/healthz")).json() == {"ok": True}
            assert (await http.post(url + "/v1/sandboxes/list", json={})).status_code == 401
            other_pods_token = {"authorization": f"Bearer {pod_token('right', 'pod-b')}"}
            assert (await http.post(url + "/v1/sandboxes/list", json={}, headers=other_pods_token)).status_code == 401
            mine = {"authorization": f"Bearer {pod_token('right', executors[0].name)}"}
            assert (await http.post(url + "/v1/sandboxes/nope", json={}, headers=mine)).status_code == 404
            assert (await http.post(url + "/v1/sandboxes/", json={"request": {"cpu_cores": -1}},
                                    headers=mine)).status_code == 400
            assert (await http.post(url + "/v1/sandboxes/", json={}, headers=mine)).status_code == 400
            assert (await http.post(url + "/v1/sandboxes/x/exec", content=b"{not json",
                                    headers=mine)).status_code == 400


async def test_no_ready_executor_is_a_typed_error() -> None:
    kube = KubernetesBackend(FakeKubeApi([]), "key")
    try:
        with pytest.raises(SandboxUnavailableError, match="no executor"):
            await kube.create(CreateSandboxRequest())
        with pytest.raises(SandboxNotRunningError):
            await kube.get("not-an-id")
    finally:
        await kube.close()


async def test_the_executor_runs_as_a_process_like_in_a_pod(sandbox_root: Path, tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text("pod-key\n")
    root = sandbox_root / "process"
    process = subprocess.Popen(
        [sys.executable, "-m", "verifiers.sandboxes.kube.executor", "--key-file", str(key), "--port", "0",
         "--root-dir", str(root)],
        env={**os.environ, "POD_NAME": "executor-0"}, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("READY "), line
        port = line.split(":")[-1].strip()
        kube = KubernetesBackend(FakeKubeApi([Executor("executor-0", f"http://127.0.0.1:{port}")]), "pod-key")
        client = AsyncSandboxClient(kube)
        box = await client.create(CreateSandboxRequest())
        assert (await client.execute_command(box.id, "echo from-pod")).stdout == "from-pod\n"
        await client.delete(box.id)
        await kube.close()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)
    assert not [p for p in root.iterdir() if p.name.isdigit()]
