"""``vf-hub``: admin bootstrap, ``serve`` as a real process (kill -9 mid-upload), and the client commands."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from hub_server import Settings
from hub_server.cli.vf_hub import app
from hub_server.db import Database, File
from hub_server.testing.dists import make_wheel, upload_form
from tests.hub_server.conftest import basic, bearer

REPO_ROOT = Path(__file__).resolve().parents[3]
runner = CliRunner()


def _admin(data_dir: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["admin", *args, "--data-dir", str(data_dir)])
    return result.exit_code, result.output


def _create_user(data_dir: Path, name: str) -> str:
    code, output = _admin(data_dir, "create-user", name)
    assert code == 0, output
    return output.strip().splitlines()[-1]


def test_create_user_prints_the_token_alone_on_the_last_line(tmp_path: Path) -> None:
    token = _create_user(tmp_path, "alice")
    assert token.startswith("vfh_") and " " not in token
    code, output = _admin(tmp_path, "create-user", "alice")
    assert code == 1 and "taken" in output
    code, output = _admin(tmp_path, "create-user", "Bad Name")
    assert code == 2 and "vf-hub: error: invalid owner name" in output and "Traceback" not in output


def test_orgs_and_members(tmp_path: Path) -> None:
    _create_user(tmp_path, "alice")
    assert _admin(tmp_path, "create-org", "lab", "--admin", "alice")[0] == 0
    assert _admin(tmp_path, "add-member", "lab", "alice", "--role", "member")[0] == 0
    code, output = _admin(tmp_path, "add-member", "lab", "nobody")
    assert code == 1 and "no owner named 'nobody'" in output
    code, output = _admin(tmp_path, "add-member", "lab", "alice", "--role", "boss")
    assert code == 2 and "role must be one of" in output


def test_client_commands_report_errors_in_one_line(tmp_path: Path) -> None:
    for args in (["install", "not-a-ref"], ["info", "a/b/c"], ["yank", "alice/demo-env"]):
        result = runner.invoke(app, [*args, "--hub", "http://127.0.0.1:9"])
        assert result.exit_code == 2 and "vf-hub: error:" in result.output, result.output
    result = runner.invoke(app, ["push", str(tmp_path), "--hub", "http://127.0.0.1:9"])
    assert result.exit_code == 2 and "no pyproject.toml" in result.output


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _serve(data_dir: Path, port: int, *options: str) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-m", "hub_server.cli.vf_hub", "serve", "--port", str(port),
                                "--data-dir", str(data_dir), *options],
                               cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "vf-hub serve did not start"
            time.sleep(0.1)
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=10)


@pytest.mark.slow
def test_kill_9_mid_upload_leaves_nothing_visible_and_retry_works(tmp_path: Path) -> None:  # §6.19
    data = tmp_path / "hub"
    token = _create_user(data, "alice")
    wheel = make_wheel(tmp_path, "big-env", "0.1.0", body="X = '" + os.urandom(8 << 20).hex() + "'\n")
    port = _free_port()
    boundary = "XyZ"
    head = "".join(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
                   for k, v in upload_form(wheel, "big-env", "0.1.0").items())
    head += f'--{boundary}\r\nContent-Disposition: form-data; name="content"; filename="{wheel.name}"\r\n\r\n'
    body_size = len(head) + wheel.stat().st_size + len(f"\r\n--{boundary}--\r\n")
    with _serve(data, port) as server:
        auth = basic(token)["Authorization"]
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall((f"POST /legacy/ HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\n"
                          f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
                          f"Content-Length: {body_size}\r\n\r\n{head}").encode())
            sock.sendall(wheel.read_bytes()[: wheel.stat().st_size // 2])
            staging = data / "blobs" / ".staging"
            deadline = time.monotonic() + 30
            while not any(p.stat().st_size > 0 for p in staging.rglob("upload-*")):
                assert time.monotonic() < deadline, "the upload never reached the staging folder"
                time.sleep(0.05)
            os.kill(server.pid, signal.SIGKILL)
            server.wait(timeout=10)
    db = Database(f"sqlite:///{data / 'hub.sqlite3'}")
    with db.read() as session:
        assert session.scalar(select(func.count(File.id))) == 0
    db.dispose()
    assert not (data / "blobs" / "sha256").exists()
    assert list(staging.rglob("upload-*")), "the killed upload left its partial staging file"
    with _serve(data, port):
        assert not list(staging.rglob("upload-*")), "the restart did not sweep the dead worker's staging"
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/simple/big-env/").status_code == 404
        with open(wheel, "rb") as handle:
            retry = httpx.post(f"{base}/legacy/", data=upload_form(wheel, "big-env", "0.1.0"),
                               files={"content": (wheel.name, handle)}, auth=("__token__", token), timeout=120)
        assert retry.status_code == 200, retry.text
        assert wheel.name in httpx.get(f"{base}/simple/big-env/").text


@pytest.mark.slow
def test_serve_believes_x_forwarded_for_only_from_configured_proxies(tmp_path: Path) -> None:
    limit = Settings().failed_auth_per_minute
    port = _free_port()

    def whoami(i: int) -> int:  # a new bad token id and a new claimed address every time
        headers = {**basic(f"vfh_{i:012x}_" + "a" * 43), "X-Forwarded-For": f"203.0.113.{i % 250}"}
        return httpx.get(f"http://127.0.0.1:{port}/api/v1/whoami", headers=headers, timeout=30).status_code

    with _serve(tmp_path / "direct", port):  # no trusted proxy: the header is the client's say-so, ignored
        assert [whoami(i) for i in range(limit + 1)] == [403] * limit + [429]  # rotating it escaped the limit
    with _serve(tmp_path / "proxied", port, "--forwarded-allow-ips", "127.0.0.1"):  # behind a proxy here
        assert [whoami(i) for i in range(limit + 1)] == [403] * (limit + 1)  # each forwarded client: own budget


def test_serve_refuses_a_forwarded_allow_ips_entry_that_is_not_an_address(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("VF_HUB_FORWARDED_ALLOW_IPS", "VF_HUB_DATA_DIR"):
        monkeypatch.setenv(name, "")  # serve exports its options for the workers; restored after the test
    result = runner.invoke(app, ["serve", "--data-dir", str(tmp_path), "--forwarded-allow-ips", "10.0.0.1,everyone"])
    assert result.exit_code == 1 and "'everyone' is not an IP address or network" in result.output, result.output


@pytest.fixture
def live_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    """A Hub on 127.0.0.1 in this process, a user's token, and a private config folder for ``login``."""
    from hub_server import Settings, create_app
    from tests.hub_server.conftest import LiveServer

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    for name in ("VF_HUB_URL", "VF_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    token = _create_user(tmp_path / "hub", "alice")
    hub_app = create_app(Settings(data_dir=tmp_path / "hub"))
    with LiveServer(hub_app) as url:
        yield url, token
    hub_app.state.hub.db.dispose()


def _cli(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_client_commands_against_a_live_hub(live_hub: tuple[str, str], tmp_path: Path) -> None:
    url, token = live_hub
    wheel = make_wheel(tmp_path, "demo-env", "0.1.0", summary="Reverse text")
    with open(wheel, "rb") as handle:
        assert httpx.post(f"{url}/legacy/", data=upload_form(wheel, "demo-env", "0.1.0"), headers=basic(token),
                          files={"content": (wheel.name, handle)}).status_code == 200
    assert "Logged in to" in _cli("login", "--hub", url, "--token", token)  # later commands need no flags
    assert "alice/demo-env  0.1.0  Reverse text" in _cli("search", "reverse")
    shown = _cli("info", "alice/demo-env")
    assert shown.startswith("alice/demo-env\n  Reverse text\nlatest:  0.1.0\n")
    assert f"page:    {url}/alice/demo-env" in shown
    assert "install (uv): uv pip install" in shown and "versions (1):\n  0.1.0  20" in shown
    assert '"latest": "0.1.0"' in _cli("info", "alice/demo-env", "--json")
    assert "yanked" in _cli("yank", "alice/demo-env@0.1.0", "--reason", "broken")
    assert httpx.get(f"{url}/api/v1/projects/alice/demo-env").json()["latest"] is None
    assert "un-yanked" in _cli("unyank", "alice/demo-env@0.1.0")
    uv_line = _cli("install", "alice/demo-env@0.1.0", "--dry-run").strip()
    assert "demo-env==0.1.0" in uv_line and f"{url}/alice/simple/" in uv_line and "first-index" in uv_line
    pip_line = _cli("install", "alice/demo-env", "--with", "pip", "--dry-run", "--python", "/x/python").strip()
    assert "--python /x/python install demo-env @ " in pip_line and "#sha256=" in pip_line
    assert "__token__" not in pip_line  # public: no credentials in URLs
    httpx.patch(f"{url}/api/v1/projects/alice/demo-env", json={"private": True}, headers=bearer(token))
    private_line = _cli("install", "alice/demo-env", "--dry-run").strip()
    assert "__token__:****@" in private_line and token not in private_line
    created = _cli("token", "create", "--project", "demo-env", "--expires-days", "2").strip().splitlines()[-1]
    token_id = created.split("_")[1]
    assert token_id in _cli("token", "list")
    assert f"Revoked {token_id}" in _cli("token", "revoke", token_id)
    result = runner.invoke(app, ["search", "--token", created])
    assert result.exit_code == 0  # a revoked token on a read path is simply anonymous
    result = runner.invoke(app, ["token", "list", "--token", created])
    assert result.exit_code == 1 and "revoked" in result.output
    result = runner.invoke(app, ["install", "alice/demo-env@9.9", "--dry-run"])
    assert result.exit_code == 1 and "no version 9.9" in result.output
    result = runner.invoke(app, ["install", "alice/demo-env", "--with", "conda", "--dry-run"])
    assert result.exit_code == 2 and "installer must be one of" in result.output


def _venv_with_sdk(root: Path) -> Path:
    """A fresh venv with this SDK installed from its wheel (its dependencies from the registry)."""
    from tests.hub_server.clients import new_venv, run, uv

    run(sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(root / "sdk"), str(REPO_ROOT))
    python = new_venv(root / "venv")
    run(uv(), "pip", "install", "--python", str(python), str(next((root / "sdk").glob("verifiers-*.whl"))))
    return python


@pytest.mark.slow
def test_push_then_install_with_pip_and_uv_then_vf_eval(live_hub: tuple[str, str], tmp_path: Path) -> None:
    from tests.hub_server.clients import installed, run
    from verifiers.testing import ScriptedServer

    url, token = live_hub
    run(sys.executable, "-m", "verifiers.cli.vf_init", "hub-demo", "--path", str(tmp_path / "envs"))
    package = tmp_path / "envs" / "hub_demo"
    pushed = _cli("push", str(package), "--hub", url, "--token", token, "--no-isolation")
    assert "Check passed: one rollout scored" in pushed and "Published alice/hub-demo@0.1.0" in pushed
    again = runner.invoke(app, ["push", str(package), "--hub", url, "--token", token, "--no-isolation", "--no-check"])
    assert again.exit_code == 2 and "already on the Hub" in again.output
    assert "alice/hub-demo" in _cli("search", "hub-demo", "--hub", url)
    python = _venv_with_sdk(tmp_path)
    for installer in ("pip", "uv"):
        _cli("install", "alice/hub-demo@0.1.0", "--with", installer, "--python", str(python), "--hub", url)
        assert installed(python, "hub-demo") == "0.1.0"
        run(sys.executable, "-m", "pip", "--python", str(python), "uninstall", "-y", "-q", "hub-demo")
    _cli("install", "alice/hub-demo@0.1.0", "--python", str(python), "--hub", url)
    with ScriptedServer(policy="echo", port=0).running() as base_url:
        done = run(str(python.parent / "vf-eval"), "hub-demo", "-m", "scripted", "-b", base_url, "-n", "2", "-r", "1",
                   cwd=tmp_path)
    assert "reward" in done.stdout.lower()


@pytest.mark.slow
def test_push_refuses_a_package_that_fails_its_check(live_hub: tuple[str, str], tmp_path: Path) -> None:
    from tests.hub_server.clients import run

    url, token = live_hub
    run(sys.executable, "-m", "verifiers.cli.vf_init", "broken-env", "--path", str(tmp_path / "envs"))
    module = tmp_path / "envs" / "broken_env" / "broken_env.py"
    module.write_text(module.read_text() + "\n\ndef load_environment(**kwargs):\n    raise RuntimeError('boom')\n")
    result = runner.invoke(app, ["push", str(module.parent), "--hub", url, "--token", token, "--no-isolation"])
    assert result.exit_code == 2 and "failed its check" in result.output and "boom" in result.output
    assert httpx.get(f"{url}/simple/broken-env/").status_code == 404  # nothing was uploaded
