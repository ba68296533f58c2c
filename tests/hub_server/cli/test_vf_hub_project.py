"""``vf-hub project set-policy``: the owner turns the failing-check policy on and off against a live Hub, and
bad input (a version, no policy, a project of someone else's, a project that does not exist) is one clear line.
``vf-hub worker check`` refuses a lease no longer than its time limit before it builds anything."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from hub_server import Settings, create_app
from hub_server.cli.vf_hub import app
from hub_server.testing.dists import make_wheel, upload_form
from tests.hub_server.conftest import LiveServer, basic

runner = CliRunner()


def _user(data_dir: Path, name: str) -> str:
    result = runner.invoke(app, ["admin", "create-user", name, "--data-dir", str(data_dir)])
    assert result.exit_code == 0, result.output
    return result.output.strip().splitlines()[-1]


@pytest.fixture
def hub_with_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str, str]]:
    """A live Hub where alice published demo-env 0.1.0: its URL, alice's token, bob's token."""
    for name in ("VF_HUB_URL", "VF_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no saved login is read
    alice, bob = _user(tmp_path / "hub", "alice"), _user(tmp_path / "hub", "bob")
    hub_app = create_app(Settings(data_dir=tmp_path / "hub"))
    wheel = make_wheel(tmp_path, "demo-env", "0.1.0")
    with LiveServer(hub_app) as url:
        with wheel.open("rb") as handle:
            assert httpx.post(f"{url}/legacy/", data=upload_form(wheel, "demo-env", "0.1.0"), headers=basic(alice),
                              files={"content": (wheel.name, handle)}).status_code == 200
        yield url, alice, bob
    hub_app.state.hub.db.dispose()


def _policy(url: str, token: str, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["project", "set-policy", *args, "--hub", url, "--token", token])
    return result.exit_code, result.output


def _refuses(url: str) -> bool:
    return bool(httpx.get(f"{url}/api/v1/projects/alice/demo-env").json()["refuse_failing_checks"])


def test_the_owner_turns_the_policy_on_and_off(hub_with_project: tuple[str, str, str]) -> None:
    url, alice, _bob = hub_with_project
    assert not _refuses(url)
    code, output = _policy(url, alice, "alice/demo-env", "--refuse-failing-checks")
    assert code == 0 and "yanked if they fail the Hub's check" in output, output
    assert _refuses(url)
    code, output = _policy(url, alice, "alice/demo-env", "--no-refuse-failing-checks")
    assert code == 0 and "no longer yanked" in output, output
    assert not _refuses(url)


def test_bad_input_is_one_line_and_changes_nothing(hub_with_project: tuple[str, str, str]) -> None:
    url, alice, bob = hub_with_project
    for args, code, message in (
            (["alice/demo-env@0.1.0", "--refuse-failing-checks"], 2, "the policy is the project's, not a version's"),
            (["alice/demo-env"], 2, "name the policy: --refuse-failing-checks or --no-refuse-failing-checks"),
            (["not-a-ref", "--refuse-failing-checks"], 2, "invalid environment reference 'not-a-ref'"),
            (["alice/no-such-env", "--refuse-failing-checks"], 1, "404"),
    ):
        got, output = _policy(url, alice, *args)
        assert got == code and f"vf-hub: error: {message}" in output and "Traceback" not in output, output
    got, output = _policy(url, bob, "alice/demo-env", "--refuse-failing-checks")  # not bob's project
    assert got == 1 and output.startswith("vf-hub: error: 403"), output
    assert not _refuses(url)


def test_the_worker_refuses_a_lease_within_its_time_limit(tmp_path: Path) -> None:
    result = runner.invoke(app, ["worker", "check", "--data-dir", str(tmp_path / "hub"), "--time-limit", "60",
                                 "--lease", "60"])
    assert result.exit_code == 2 and "vf-hub: error: --lease (60 s) must be longer than --time-limit (60 s)" in (
        result.output)
    assert not (tmp_path / "hub").exists()  # refused before any image or database was made
