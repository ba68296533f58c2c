"""Every reference environment published to a local Hub, installed by ``owner/name`` into a fresh venv, and
evaluated there by name, as a user of the Hub meets it.

One Hub (``vf-hub serve`` on a free port), one fresh venv holding only this SDK's wheel and its dependencies (no
Hub or trainer code: each installed environment is checked to have brought none);
each package goes through ``vf-hub push`` (build, check, upload), ``vf-hub install OWNER/NAME@VERSION`` (uv,
from the Hub; the package's own dependencies from the registry), then ``vf-eval OWNER/NAME`` in that venv
against the scripted server. The venv is not the checkout: the environment must come from the Hub.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomllib

from tests.fresh_venv import BIN, run, sdk_venv
from verifiers.testing import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = sorted(p.parent.name for p in (ROOT / "environments").glob("*/pyproject.toml"))
# Top-level packages an environment-only venv must not have: the Hub's and the trainer's distributions ship the
# first two, and the SDK once shipped a `cli` package that would shadow a user's own.
NOT_PULLED = ("hub_server", "trainer_adapter", "cli")

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    data = tmp_path_factory.mktemp("hub")
    token = run(BIN / "vf-hub", "admin", "create-user", "alice", "--data-dir", data).strip().splitlines()[-1]
    url = f"http://127.0.0.1:{free_port()}"
    port = url.rsplit(":", 1)[1]
    with open(data / "hub.log", "w") as log:
        server = subprocess.Popen([BIN / "vf-hub", "serve", "--data-dir", data, "--port", port, "--no-access-log"],
                                  stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/simple/", timeout=2).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, (data / "hub.log").read_text()
                time.sleep(0.2)
        yield {"VF_HUB_URL": url, "VF_HUB_TOKEN": token}
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with this SDK's wheel (and its dependencies from the registry), nothing else."""
    return sdk_venv(tmp_path_factory.mktemp("venv"))


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    with ScriptedServer("echo", port=0).running() as url:
        yield url


@pytest.mark.parametrize("package", PACKAGES)
def test_published_installed_and_evaluated_by_name(package: str, hub: dict[str, str], venv: Path, model_url: str,
                                                  tmp_path: Path) -> None:
    project = tomllib.loads((ROOT / "environments" / package / "pyproject.toml").read_text())["project"]
    name, version = project["name"], project["version"]
    source = tmp_path / package
    shutil.copytree(ROOT / "environments" / package, source,
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist"))
    run(BIN / "vf-hub", "push", source, "--no-isolation", "--no-check", env=hub, timeout=300)
    ref = f"alice/{name}@{version}"
    run(BIN / "vf-hub", "install", ref, "--python", venv / "bin" / "python", env=hub, timeout=900)
    work = tmp_path / "work"  # not the checkout: the SDK and the package come from the venv's site-packages
    work.mkdir()
    where = run(venv / "bin" / "python", "-c", f"import importlib.util as u; print(u.find_spec({package!r}).origin)",
                cwd=work)
    assert str(venv) in where and str(ROOT) not in where, where
    # Installing an environment brings the SDK only: no Hub or trainer code, no top-level `cli` package.
    others = run(venv / "bin" / "python", "-c", f"import importlib.util as u; print([m for m in {NOT_PULLED!r} "
                 "if u.find_spec(m) is not None])", cwd=work)
    assert others.strip() == "[]", others
    out = run(venv / "bin" / "vf-eval", ref, "-b", model_url, "-m", "echo", "-n", "2", "-r", "1", cwd=work,
              env={"OPENAI_API_KEY": "x"}, timeout=600)
    assert "errors: none" in out, out[-3000:]
    assert re.search(r"results: \S+results\.jsonl", out), out[-3000:]
