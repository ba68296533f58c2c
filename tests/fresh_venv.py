"""A fresh venv holding this SDK's wheel (and what it asks for), as a user who installs it gets: the tests that
use one see what a package or a README line needs, not what the checkout's .venv happens to have."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
# This machine's pip and uv settings (extra indexes, local wheel folders) must not choose what gets installed.
ISOLATED = {"UV_NO_CONFIG": "1", "PIP_CONFIG_FILE": os.devnull}
# The project's distributions by part: the folder of each one's pyproject.toml (the SDK's is the root).
DISTRIBUTIONS = {"sdk": ROOT, "hub": ROOT / "distributions" / "hub", "trainer": ROOT / "distributions" / "trainer"}


def run(*cmd: str | Path, timeout: float = 600, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Run ``cmd`` isolated from this machine's pip/uv settings; its stdout, or a failure showing both streams."""
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, **ISOLATED, **(env or {})})
    assert done.returncode == 0, f"{cmd}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def build_wheel(project_dir: Path, outdir: Path) -> Path:
    """The wheel of the project at ``project_dir`` (a folder of :data:`DISTRIBUTIONS`), built into ``outdir``
    with the checkout's hatchling (no isolation: no download); its path."""
    run(sys.executable, "-m", "build", "-q", "--wheel", "--no-isolation", "--outdir", outdir, ".", cwd=project_dir)
    name = tomllib.loads((project_dir / "pyproject.toml").read_text())["project"]["name"]
    [wheel] = outdir.glob(f"{name.replace('-', '_')}-*.whl")  # the wheel's file name spells "-" as "_"
    return wheel


def sdk_venv(where: Path, extras: str = "", packages: tuple[Path, ...] = (), parts: tuple[str, ...] = ()) -> Path:
    """A new venv at ``where/venv`` with the SDK's wheel built from the checkout (with ``extras``, e.g.
    ``"tui"``), the wheels of the distributions named in ``parts`` (``"hub"``, ``"trainer"``), the dependencies
    from the registry, and ``packages`` (paths) installed from source."""
    run(BIN / "uv", "venv", "-q", "--python", sys.executable, where / "venv")
    wheel = build_wheel(DISTRIBUTIONS["sdk"], where / "sdk")
    sdk = f"verifiers[{extras}] @ {wheel.as_uri()}" if extras else str(wheel)
    # All in one install, so the parts' pin on the SDK of their build is met by this wheel, not the registry's.
    others = [build_wheel(DISTRIBUTIONS[part], where / part) for part in parts]
    run(BIN / "uv", "pip", "install", "-q", "--python", where / "venv" / "bin" / "python", sdk, *others, *packages,
        timeout=900)
    return where / "venv"
