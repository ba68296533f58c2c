"""Executor manifests: valid against the Kubernetes schema, and every protection present."""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest
from pydantic import ValidationError

from verifiers.sandboxes.kube import KubeExecutorConfig, render_manifests, validate_manifests


def test_manifests_validate_and_carry_the_isolation() -> None:
    manifests = render_manifests(KubeExecutorConfig(image="registry/executor:1", runtime_class="gvisor", replicas=3))
    validate_manifests(manifests)
    deployment, service, policy = manifests
    pod = deployment["spec"]["template"]["spec"]
    assert pod["runtimeClassName"] == "gvisor" and pod["automountServiceAccountToken"] is False
    limits = pod["containers"][0]["resources"]["limits"]
    assert set(limits) == {"cpu", "memory", "ephemeral-storage"}
    assert pod["containers"][0]["securityContext"]["allowPrivilegeEscalation"] is False
    assert policy["kind"] == "NetworkPolicy" and policy["spec"]["egress"] == []
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    assert service["spec"]["clusterIP"] == "None" and deployment["spec"]["replicas"] == 3
    assert "runtimeClassName" not in render_manifests(KubeExecutorConfig(image="x"))[0]["spec"]["template"]["spec"]


def test_a_manifest_that_breaks_the_schema_is_caught() -> None:
    broken = copy.deepcopy(render_manifests(KubeExecutorConfig(image="x")))
    broken[0]["spec"]["template"]["spec"]["containers"][0]["resource"] = {}  # a typo of `resources`
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_manifests(broken)


@pytest.mark.parametrize("fields", [{}, {"image": "x", "replicas": -1}, {"image": "x", "colour": "red"},
                                    {"image": "x", "port": 0}])
def test_bad_configs_are_refused(fields: dict) -> None:
    with pytest.raises(ValidationError):
        KubeExecutorConfig(**fields)
