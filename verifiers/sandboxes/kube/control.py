"""The control path: which executor pods exist, where they listen, and how many to run.

:class:`KubeApi` is the seam. :class:`LightkubeApi` asks a real cluster
(``pip install lightkube``; pods listed by label, the Deployment scaled through
its scale subresource); :class:`FakeKubeApi` holds a fixed list, for tests and
for executors run by hand.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Executor:
    """One executor pod: its name (which names its token) and its base URL."""

    name: str
    url: str


class KubeApi(abc.ABC):
    """What the Kubernetes backend needs from the cluster."""

    @abc.abstractmethod
    async def executors(self) -> list[Executor]:
        """Executor pods that are running and ready."""

    @abc.abstractmethod
    async def scale(self, replicas: int) -> None:
        """Ask for ``replicas`` executor pods."""


class FakeKubeApi(KubeApi):
    """A fixed set of executors (e.g. servers on 127.0.0.1); ``scale`` only records the request."""

    def __init__(self, executors: list[Executor]) -> None:
        self._executors = list(executors)
        self.replicas = len(executors)

    async def executors(self) -> list[Executor]:
        return list(self._executors)

    async def scale(self, replicas: int) -> None:
        self.replicas = replicas


class LightkubeApi(KubeApi):
    """Executors of a Deployment in a real cluster, through lightkube's async client.

    Args:
        namespace, deployment: where the executors run (as rendered by ``render_manifests``).
        selector: labels of the executor pods.
        port: the executors' port.
        client: a ``lightkube.AsyncClient`` (default: one from the usual kubeconfig / in-cluster config).
    """

    def __init__(self, namespace: str, deployment: str, selector: dict[str, str], port: int = 8080,
                 client: Any = None) -> None:
        self.namespace, self.deployment, self.selector, self.port = namespace, deployment, selector, port
        self._client = client

    def _lightkube(self) -> Any:
        if self._client is None:
            from lightkube import AsyncClient  # the optional `kube` extra

            self._client = AsyncClient(namespace=self.namespace)
        return self._client

    async def executors(self) -> list[Executor]:
        from lightkube.resources.core_v1 import Pod

        found = []
        async for pod in self._lightkube().list(Pod, namespace=self.namespace, labels=self.selector):
            status = pod.status
            ready = any(c.type == "Ready" and c.status == "True" for c in (status.conditions or []))
            if status.phase == "Running" and ready and status.podIP:
                found.append(Executor(pod.metadata.name, f"http://{status.podIP}:{self.port}"))
        return sorted(found, key=lambda e: e.name)

    async def scale(self, replicas: int) -> None:
        from lightkube.models.autoscaling_v1 import ScaleSpec
        from lightkube.models.meta_v1 import ObjectMeta
        from lightkube.resources.apps_v1 import Deployment

        scale = Deployment.Scale(metadata=ObjectMeta(name=self.deployment, namespace=self.namespace),
                                 spec=ScaleSpec(replicas=replicas))
        await self._lightkube().replace(scale)


__all__ = ["Executor", "KubeApi", "FakeKubeApi", "LightkubeApi"]
