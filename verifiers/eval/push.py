"""``vf-eval ... --push``: attach a finished run to the environment's version on the Environments Hub.

What is sent: the run's ``metadata.json`` (without the ``--header`` values, which may carry API
keys), the summary table as text and the rollouts (prompt, completion, reward, metrics, error; cut to the
Hub's limits, below), to ``POST /api/v1/evals``. The version is the one the run
actually used: the installed distribution that provides the environment's module, with the
sha256 of the archive it was installed from when the installer recorded one (the Hub then
marks the result as coming from its own file). The Hub shows the result on the environment's leaderboard,
and its rollouts on the result's page.
The SDK speaks to the Hub over HTTP only (it never imports the Hub's code).
"""

from __future__ import annotations

import io
import os
from typing import Any

import httpx
from pydantic import BaseModel, Field
from rich.console import Console

from verifiers.errors import InfraError, UsageError
from verifiers.eval.hub_rollouts import rollout_records
from verifiers.eval.metadata import package_info
from verifiers.loading import parse_env_id

DEFAULT_HUB_URL = "http://127.0.0.1:8000"
TOKEN_VAR = "VF_HUB_TOKEN"
URL_VAR = "VF_HUB_URL"
_SECRET_CONFIG_KEYS = ("headers",)


class PushConfig(BaseModel):
    """Where ``--push`` sends a run (its fields are ``vf-eval`` flags)."""

    hub: str | None = Field(None, description=f"Hub URL for --push (default: ${URL_VAR}, else {DEFAULT_HUB_URL}).")
    timeout: float = Field(30.0, gt=0, description="Seconds to wait for the Hub.")

    def url(self) -> str:
        return (self.hub or os.environ.get(URL_VAR) or DEFAULT_HUB_URL).rstrip("/")


def summary_text(outputs: list[dict[str, Any]], metadata: dict[str, Any]) -> str:
    """The end-of-run table as plain text (what ``vf-eval`` printed)."""
    from verifiers.eval.summary import render_summary

    console = Console(file=io.StringIO(), record=True, width=100, color_system=None)
    render_summary(outputs, metadata, console)
    return console.export_text()


def installed_package(metadata: dict[str, Any]) -> dict[str, Any]:
    """The installed distribution that provides the run's environment module.

    Looked up from the env id's module (what ``load_environment`` imported): the metadata's own
    record names the module of the environment's *class*, which is ``verifiers`` itself when
    ``load_environment`` returns a built-in class such as ``vf.SingleTurnEnv``.
    """
    recorded = (metadata.get("version_info") or {}).get("environment_package") or {}
    env_id = metadata.get("env_id")
    if isinstance(env_id, str):
        found = package_info(parse_env_id(env_id).module)
        if found.get("distribution"):
            return found
    return recorded if isinstance(recorded, dict) else {}


def push_body(metadata: dict[str, Any], summary: str, outputs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The request body for the Hub: which version the run used, and the run itself."""
    if metadata.get("status") != "complete":
        raise UsageError("only a finished run can be pushed (its metadata.json says it is still running)")
    package = installed_package(metadata)
    name, version = package.get("distribution"), package.get("version")
    if not name or not version:
        raise UsageError(f"cannot push: {metadata.get('env_id')!r} was not loaded from an installed package, so the "
                         "run names no version; install it (vf-hub install OWNER/NAME@VERSION) and run again")
    clean = dict(metadata)
    clean["version_info"] = {**(metadata.get("version_info") or {}), "environment_package": package}
    config = metadata.get("config")
    if isinstance(config, dict):
        clean["config"] = {k: v for k, v in config.items() if k not in _SECRET_CONFIG_KEYS}
    owner = parse_env_id(str(metadata.get("env_id", name))).owner
    return {"project": name, "version": version, "owner": owner, "metadata": clean, "summary": summary,
            "rollouts": rollout_records(outputs or [])}


def _detail(response: httpx.Response) -> str:
    try:
        return str(response.json().get("detail", response.text))
    except ValueError:
        return response.text.strip()


def push_run(metadata: dict[str, Any], summary: str, config: PushConfig | None = None,
             token: str | None = None, outputs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Send the run (and ``outputs``, its rollouts) to the Hub; returns its answer (``id``, ``url`` of the
    result's page, ``rollouts`` stored, ...).

    Raises:
        UsageError: no token, a run that cannot be pushed, or the Hub refused it (the message says why).
        InfraError: the Hub could not be reached or failed.
    """
    config = config or PushConfig()
    token = token or os.environ.get(TOKEN_VAR)
    if not token:
        raise UsageError(f"--push needs an API token: set {TOKEN_VAR} (create one with `vf-hub token create "
                         "--permission publish`)")
    body = push_body(metadata, summary, outputs)
    try:
        response = httpx.post(f"{config.url()}/api/v1/evals", json=body, timeout=config.timeout,
                              headers={"Authorization": f"Bearer {token}"})
    except httpx.HTTPError as error:
        raise InfraError(f"could not reach the Hub at {config.url()}: {error}") from error
    if response.status_code >= 500:
        raise InfraError(f"the Hub failed ({response.status_code}): {_detail(response)}")
    if not response.is_success:
        raise UsageError(f"the Hub refused the result ({response.status_code}): {_detail(response)}")
    answer: dict[str, Any] = response.json()
    return answer


__all__ = ["PushConfig", "installed_package", "push_body", "push_run", "summary_text"]
