"""The Kubernetes backend: executor pods run the local backend behind HTTP; this process routes to them.

* data path: :class:`KubernetesBackend` (httpx, a per-pod bearer token) → :class:`ExecutorServer` in each pod;
* control path: a :class:`KubeApi` that lists the executor pods and scales them (lightkube, or a fake);
* manifests: :func:`render_manifests` for the Deployment, Service and deny-all-egress NetworkPolicy.
"""

from verifiers.sandboxes.kube.backend import KubernetesBackend
from verifiers.sandboxes.kube.control import Executor, FakeKubeApi, KubeApi, LightkubeApi
from verifiers.sandboxes.kube.executor import ExecutorServer
from verifiers.sandboxes.kube.manifests import KubeExecutorConfig, render_manifests, validate_manifests
from verifiers.sandboxes.kube.wire import pod_token

__all__ = [
    "KubernetesBackend", "Executor", "KubeApi", "FakeKubeApi", "LightkubeApi", "ExecutorServer",
    "KubeExecutorConfig", "render_manifests", "validate_manifests", "pod_token",
]
