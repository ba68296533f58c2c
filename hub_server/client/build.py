"""Building an environment package's wheel and sdist with PEP 517 ``build``, and reading its name."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: verifiers-hub installs the backport
    import tomli as tomllib

from hub_server.errors import BadRequest


@dataclass(frozen=True)
class ProjectSource:
    """The name and version a package folder's ``pyproject.toml`` declares."""

    path: Path
    name: str
    version: str


def read_project(path: Path) -> ProjectSource:
    """The ``[project]`` name and (static) version of the package at ``path``."""
    pyproject = path / "pyproject.toml"
    if not pyproject.is_file():
        raise BadRequest(f"{path} has no pyproject.toml; is it an environment package (see `vf-init`)?")
    try:
        project = tomllib.loads(pyproject.read_text()).get("project", {})
    except tomllib.TOMLDecodeError as error:
        raise BadRequest(f"{pyproject} is not valid TOML: {error}") from None
    name, version = project.get("name"), project.get("version")
    if not isinstance(name, str) or not isinstance(version, str):
        raise BadRequest(f"{pyproject} must set [project] name and a static version")
    return ProjectSource(path, name, version)


def build_dists(path: Path, outdir: Path, isolated: bool = True) -> list[Path]:
    """Build sdist and wheel into ``outdir`` (``python -m build``); return the files, sdist first.

    ``isolated=False`` builds with the packages of this interpreter (no download of the build backend).
    """
    outdir.mkdir(parents=True, exist_ok=True)
    before = set(outdir.iterdir())
    command = [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(outdir), str(path)]
    if not isolated:
        command.insert(3, "--no-isolation")
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise BadRequest(f"building {path} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    built = sorted(set(outdir.iterdir()) - before, key=lambda p: (not p.name.endswith(".tar.gz"), p.name))
    if not built:
        raise BadRequest(f"building {path} produced no files")
    return built
