"""Running the real clients (twine, pip, uv) against a Hub, isolated from this machine's configuration."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ISOLATED = {"UV_NO_CONFIG": "1", "PIP_CONFIG_FILE": os.devnull, "TWINE_NON_INTERACTIVE": "1"}


def run(*cmd: str, check: bool = True, env: dict[str, str] | None = None, timeout: int = 300,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command; with ``check`` the test fails showing its output when it exits non-zero."""
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, **ISOLATED, **(env or {})})
    if check:
        assert done.returncode == 0, f"{cmd}\n{done.stdout}\n{done.stderr}"
    return done


def uv() -> str:
    path = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    if not Path(path).exists():
        pytest.skip("uv is not installed")
    return path


def twine(url: str, token: str, *files: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``twine upload --repository-url URL -u __token__ -p TOKEN FILES`` (verbose: the body is printed)."""
    return run(sys.executable, "-m", "twine", "upload", "--repository-url", url, "-u", "__token__", "-p", token,
               "--non-interactive", "--disable-progress-bar", "--verbose", *map(str, files), check=check)


def new_venv(root: Path) -> Path:
    """An empty venv (no pip inside: pip is run from this interpreter with ``--python``)."""
    run(uv(), "venv", "-q", "--python", sys.executable, str(root))
    return root / "bin" / "python"


def pip_install(python: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run(sys.executable, "-m", "pip", "--python", str(python), "--isolated", "install", "--no-cache-dir",
               "--disable-pip-version-check", *args, check=check)


def uv_install(python: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run(uv(), "pip", "install", "--python", str(python), "--no-cache", *args, check=check)


def installed(python: Path, name: str) -> str | None:
    """The installed version of ``name`` in that interpreter's environment, or None."""
    code = ("import importlib.metadata as m, sys\n"
            "try: print(m.version(sys.argv[1]))\n"
            "except m.PackageNotFoundError: print('-')")
    version = run(str(python), "-c", code, name).stdout.strip()
    return None if version == "-" else version


@contextmanager
def static_index(root: Path, wheels: dict[str, list[Path]]) -> Iterator[str]:
    """A plain PEP 503 index (a stand-in for PyPI) serving ``{project: [wheel, ...]}``; yields its URL."""
    for project, files in wheels.items():
        folder = root / "simple" / project
        folder.mkdir(parents=True, exist_ok=True)
        links = []
        for wheel in files:
            shutil.copy(wheel, folder / wheel.name)
            links.append(f'<a href="{wheel.name}">{wheel.name}</a>')
        (folder / "index.html").write_text("\n".join(links))
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass
