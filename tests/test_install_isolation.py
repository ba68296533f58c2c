"""Installing an environment package never replaces or shadows this SDK.

Environment packages declare ``verifiers`` as a dependency; this SDK *is* the
``verifiers`` distribution, so the requirement is already satisfied. Checked
with pip and uv, from a local path and from a package index that also offers
an impostor ``verifiers`` release.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

PROBE = "import verifiers, sys; print(verifiers.__version__); print(verifiers.__file__)"


def _run(*cmd: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd, timeout=600)
    assert done.returncode == 0, f"{cmd}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _uv() -> str:
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    if not Path(uv).exists():
        pytest.skip("uv is not installed")
    return uv


def _package(root: Path, name: str, version: str, requires: list[str], body: str = "") -> Path:
    src = root / f"{name}-{version}"
    module = name.replace("-", "_")
    (src / module).mkdir(parents=True)
    (src / module / "__init__.py").write_text(body)
    deps = ", ".join(f'"{r}"' for r in requires)
    (src / "pyproject.toml").write_text(textwrap.dedent(f"""
        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"
        [project]
        name = "{name}"
        version = "{version}"
        dependencies = [{deps}]
        [tool.hatch.build.targets.wheel]
        packages = ["{module}"]
    """))
    return src


def _wheel(src: Path, out: Path) -> Path:
    _run(sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(src))
    return next(out.glob(f"{src.name.rsplit('-', 1)[0].replace('-', '_')}-*.whl"))


@functools.lru_cache(maxsize=1)
def _sdk_wheel(out: str) -> Path:
    _run(sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", out, str(ROOT))
    return next(Path(out).glob("verifiers-*.whl"))


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    """A PEP 503 index on 127.0.0.1 with an env package and an impostor ``verifiers 99.0``."""
    root = tmp_path_factory.mktemp("index")
    build = root / "build"
    env_wheel = _wheel(_package(build, "tiny-env", "0.1.0", ["verifiers>=0.1.5"], "VALUE = 1\n"), build)
    impostor = _wheel(_package(build, "verifiers", "99.0", [], "__version__ = 'impostor'\n"), build)
    simple = root / "simple"
    for project, wheel in (("tiny-env", env_wheel), ("verifiers", impostor)):
        (simple / project).mkdir(parents=True)
        shutil.copy(wheel, simple / project / wheel.name)
        (simple / project / "index.html").write_text(f'<a href="{wheel.name}">{wheel.name}</a>')
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple/", env_wheel.parent / ".." / "build"
    server.shutdown()


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A fresh venv with this SDK installed from its wheel (dependencies from the registry)."""
    path = tmp_path / "venv"
    _run(_uv(), "venv", "--python", sys.executable, str(path), env={"UV_NO_CONFIG": "1"})
    wheel = _sdk_wheel(str(tmp_path.parent / "sdk-wheel"))
    # uv resolves the SDK's dependencies from the registry this machine reaches.
    _run(_uv(), "pip", "install", "--python", str(path / "bin" / "python"), str(wheel))
    return path


def _probe(venv: Path) -> list[str]:
    return _run(str(venv / "bin" / "python"), "-c", PROBE).split()


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_install_from_path_and_index_keeps_the_sdk(venv: Path, index, installer: str, tmp_path: Path) -> None:
    index_url, build = index
    before = _probe(venv)
    python = str(venv / "bin" / "python")
    env_src = next(Path(build).glob("tiny-env-0.1.0"))
    if installer == "pip":
        _run(python, "-m", "ensurepip")
        _run(python, "-m", "pip", "--isolated", "install", "-q", str(env_src))
        _run(python, "-m", "pip", "--isolated", "uninstall", "-y", "-q", "tiny-env")
        _run(python, "-m", "pip", "--isolated", "install", "-q", "--index-url", index_url, "tiny-env")
    else:
        uv, isolated = _uv(), {"UV_NO_CONFIG": "1"}
        _run(uv, "pip", "install", "--python", python, str(env_src), env=isolated)
        _run(uv, "pip", "uninstall", "--python", python, "tiny-env", env=isolated)
        _run(uv, "pip", "install", "--python", python, "--index-url", index_url, "tiny-env", env=isolated)
    assert _probe(venv) == before  # same version, same files: not replaced, not shadowed
    assert before[0].startswith("0.3.0+")
    _run(python, "-c", "import tiny_env, verifiers as vf; assert tiny_env.VALUE == 1; vf.SingleTurnEnv")
