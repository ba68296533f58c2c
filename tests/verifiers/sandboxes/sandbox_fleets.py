"""Sandbox fleets for tests: a Kubernetes backend over executor servers on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

from verifiers.sandboxes import LocalBackend, LocalBackendConfig
from verifiers.sandboxes.kube import Executor, ExecutorServer, FakeKubeApi, KubernetesBackend, pod_token
from verifiers.sandboxes.local.config import Tier

# a test module's TIERS: run it on both isolation tiers (conftest.py)
BOTH_TIERS: tuple[Tier, ...] = ("bubblewrap", "gvisor")


def leftovers(root: Path) -> list[str]:
    """Slot directories under ``root`` (each is a sandbox not yet removed)."""
    return sorted(p.name for p in root.iterdir() if p.name.isdigit()) if root.exists() else []


@asynccontextmanager
async def kube_fleet(root: Path, pods: tuple[str, ...] = ("pod-a", "pod-b"),
                     key: str = "test-key") -> AsyncIterator[KubernetesBackend]:
    """A KubernetesBackend over executor servers on 127.0.0.1, each serving its own local backend."""
    locals_: list[LocalBackend] = []
    executors: list[Executor] = []
    async with AsyncExitStack() as stack:
        for pod in pods:
            local = LocalBackend(LocalBackendConfig(root_dir=root / pod))
            locals_.append(local)
            server = ExecutorServer(local, pod_token(key, pod), host="127.0.0.1", port=0)
            executors.append(Executor(pod, await stack.enter_async_context(server.serving())))
        kube = KubernetesBackend(FakeKubeApi(executors), key)
        try:
            yield kube
        finally:
            await kube.close()
            for local, pod in zip(locals_, pods, strict=True):
                await local.close()
                assert leftovers(root / pod) == [], f"a sandbox outlived its test in {pod}"
