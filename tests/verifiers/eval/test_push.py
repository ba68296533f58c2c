"""``vf-eval --push``'s client side: what is sent, what is refused before sending, and errors by kind.

The whole path against a real Hub is ``tests/hub_server/web/test_eval_push.py``.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

from verifiers.errors import InfraError, UsageError
from verifiers.eval.push import PushConfig, push_body, push_run, summary_text


def metadata(**changes: Any) -> dict[str, Any]:
    return {"env_id": "alice/demo-env@0.1.0", "model": "m", "status": "complete", "avg_reward": 1.0,
            "num_examples": 1, "rollouts_per_example": 1, "pass_at_k": {"1": 1.0}, "pass_threshold": 0.5,
            "config": {"model": "m", "headers": ["X-Api-Key: secret"]},
            "version_info": {"environment_package": {"distribution": "demo-env", "version": "0.1.0"}}, **changes}


def test_the_body_names_the_installed_version_and_drops_header_values() -> None:
    body = push_body(metadata(), "table")
    assert (body["project"], body["version"], body["owner"], body["summary"]) == ("demo-env", "0.1.0", "alice", "table")
    assert body["metadata"]["config"] == {"model": "m"} and "secret" not in str(body)
    assert push_body(metadata(env_id="demo-env"), "")["owner"] is None


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"status": "running"}, "only a finished run"),
        ({"version_info": {"environment_package": {"module": "x", "distribution": None, "version": None}}},
         "not loaded from an installed package"),
        ({"version_info": {}}, "not loaded from an installed package"),
    ],
)
def test_runs_that_cannot_be_pushed(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        push_body(metadata(**changes), "")


def test_a_token_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VF_HUB_TOKEN", raising=False)
    with pytest.raises(UsageError, match="VF_HUB_TOKEN"):
        push_run(metadata(), "")


def test_an_unreachable_hub_is_an_infrastructure_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(InfraError, match="could not reach the Hub"):
        push_run(metadata(), "", PushConfig(hub=f"http://127.0.0.1:{port}", timeout=5), token="vfh_x")


def test_hub_url_comes_from_the_flag_then_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VF_HUB_URL", "http://hub.example:9/")
    assert PushConfig().url() == "http://hub.example:9"
    assert PushConfig(hub="http://other:1").url() == "http://other:1"
    monkeypatch.delenv("VF_HUB_URL")
    assert PushConfig().url() == "http://127.0.0.1:8000"


def test_summary_text_is_the_printed_table() -> None:
    outputs = [{"reward": 1.0, "metrics": {"exact": 1.0}, "example_id": 0}]
    text = summary_text(outputs, metadata())
    assert "reward" in text and "exact" in text and "pass@1" in text and "\x1b[" not in text


def test_the_installed_distribution_of_the_env_module_wins_over_the_recorded_one() -> None:
    import importlib.metadata

    body = push_body(metadata(env_id="pytest"), "")  # any installed module stands in for an environment
    assert (body["project"], body["version"]) == ("pytest", importlib.metadata.version("pytest"))
    assert body["metadata"]["version_info"]["environment_package"]["distribution"] == "pytest"
