"""Manifests for the executor pods: a Deployment, a headless Service and a deny-all-egress NetworkPolicy.

Pod isolation stacks on the sandboxes' own: a runtime class such as gVisor
where the cluster has it, no service-account token, seccomp RuntimeDefault,
resource and ephemeral-storage limits, and a NetworkPolicy that lets the
executors reach nothing and be reached only from the trainer's pods on their
port. bubblewrap inside the pod needs user namespaces (``privileged: false``
still works on most nodes with ``allowPrivilegeEscalation`` false and
``procMount`` default; see docs/sandboxes.md).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

_APP = "verifiers-sandbox-executor"


class KubeExecutorConfig(BaseModel):
    """The executor fleet: what ``render_manifests`` writes."""

    model_config = ConfigDict(extra="forbid")

    namespace: str = Field("verifiers", description="Namespace of the executors.")
    name: str = Field("sandbox-executor", description="Name of the Deployment, Service and NetworkPolicy.")
    image: str = Field(..., description="Image with Python, bubblewrap and this SDK installed.")
    replicas: int = Field(2, ge=0, description="Executor pods.")
    port: int = Field(8080, ge=1, le=65535, description="The executors' HTTP port.")
    key_secret: str = Field("sandbox-executor-key", description="Secret (key `key`) the pod tokens derive from.")
    runtime_class: str | None = Field(None, description="RuntimeClass for the pods, e.g. 'gvisor' (None: default).")
    cpu: str = Field("2", description="CPU request and limit per pod.")
    memory: str = Field("8Gi", description="Memory request and limit per pod.")
    ephemeral_storage: str = Field("10Gi", description="Ephemeral-storage request and limit per pod.")
    trainer_labels: dict[str, str] = Field(default_factory=lambda: {"app": "verifiers-trainer"},
                                           description="Labels of the pods allowed to call the executors.")


def _labels(config: KubeExecutorConfig) -> dict[str, str]:
    return {"app": _APP, "verifiers.dev/executor": config.name}


def _pod_spec(config: KubeExecutorConfig) -> dict[str, Any]:
    resources = {"cpu": config.cpu, "memory": config.memory, "ephemeral-storage": config.ephemeral_storage}
    container = {
        "name": "executor",
        "image": config.image,
        "args": ["python", "-m", "verifiers.sandboxes.kube.executor", "--key-file", "/var/run/verifiers/key",
                 "--port", str(config.port)],
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "ports": [{"name": "http", "containerPort": config.port, "protocol": "TCP"}],
        "resources": {"requests": resources, "limits": resources},
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
        "securityContext": {"allowPrivilegeEscalation": False, "seccompProfile": {"type": "RuntimeDefault"}},
        "volumeMounts": [{"name": "key", "mountPath": "/var/run/verifiers", "readOnly": True},
                         {"name": "sandboxes", "mountPath": "/var/lib/verifiers"}],
    }
    spec: dict[str, Any] = {
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "containers": [container],
        "volumes": [
            {"name": "key", "secret": {"secretName": config.key_secret, "items": [{"key": "key", "path": "key"}]}},
            {"name": "sandboxes", "emptyDir": {"sizeLimit": config.ephemeral_storage}},
        ],
    }
    if config.runtime_class:
        spec["runtimeClassName"] = config.runtime_class
    return spec


def render_manifests(config: KubeExecutorConfig) -> list[dict[str, Any]]:
    """The Deployment, Service and NetworkPolicy of the executor fleet, as Kubernetes objects."""
    labels, meta = _labels(config), {"name": config.name, "namespace": config.namespace}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {**meta, "labels": labels},
        "spec": {"replicas": config.replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": _pod_spec(config)}},
    }
    service = {
        "apiVersion": "v1", "kind": "Service", "metadata": {**meta, "labels": labels},
        "spec": {"clusterIP": "None", "selector": labels,
                 "ports": [{"name": "http", "port": config.port, "targetPort": "http"}]},
    }
    policy = {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta,
        "spec": {"podSelector": {"matchLabels": labels}, "policyTypes": ["Ingress", "Egress"], "egress": [],
                 "ingress": [{"from": [{"podSelector": {"matchLabels": config.trainer_labels}}],
                              "ports": [{"protocol": "TCP", "port": config.port}]}]},
    }
    return [deployment, service, policy]


def validate_manifests(manifests: list[dict[str, Any]], kubernetes_version: str = "1.30.0") -> None:
    """Check each object against the Kubernetes OpenAPI schema (strict: unknown fields fail).

    Needs ``kubernetes-validate`` (the ``kube`` extra); raises its ValidationError.
    """
    import kubernetes_validate

    for manifest in manifests:
        kubernetes_validate.validate(manifest, kubernetes_version, strict=True)


__all__ = ["KubeExecutorConfig", "render_manifests", "validate_manifests"]
