"""The read-only image a check sandbox sees at ``/image``: the SDK and its dependencies, ready to import.

The sandbox runs the host's ``/usr/bin/python3`` with no network, so nothing can be downloaded inside it.
The worker's own interpreter has the SDK installed; its requirement closure (``verifiers`` and what it needs,
plus ``pip`` to install the uploaded wheel) is linked file by file (hard links where the file system allows,
copies elsewhere) into ``<image>/site-packages``. A fresh venv in the sandbox reads it through a ``.pth``
file, so pip there sees the SDK as installed and installs only the environment's own wheel (and any
dependency found in ``<image>/wheels``, which an operator may fill: ``pip download -d``).
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import json
import os
import shutil
import stat
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOTS = ("verifiers", "pip")


def _distribution(name: str) -> md.Distribution | None:
    try:
        return md.distribution(name)
    except md.PackageNotFoundError:
        return None


def requirement_closure(roots: tuple[str, ...] = ROOTS) -> list[md.Distribution]:
    """The installed distributions ``roots`` need at run time, each once, following the extras a requirement names
    (the SDK needs ``openai[aiohttp]``: openai's own requirements plus those of its ``aiohttp`` extra)."""
    found: dict[str, md.Distribution] = {}
    done: set[tuple[str, str]] = set()  # (distribution, extra or "" for its base requirements)
    pending: list[tuple[str, frozenset[str]]] = [(name, frozenset()) for name in roots]
    while pending:
        raw, extras = pending.pop()
        name = canonicalize_name(raw)
        wanted = {""} | set(extras)
        if all((name, extra) in done for extra in wanted):
            continue
        dist = found.get(name) or _distribution(name)
        if dist is None:
            raise RuntimeError(f"{name} is not installed in the worker's Python; the check image needs it")
        found[name] = dist
        for extra in wanted - {e for (n, e) in done if n == name}:
            done.add((name, extra))
            for line in dist.requires or []:
                requirement = Requirement(line)
                if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
                    continue
                if extra and requirement.marker is None:
                    continue  # a base requirement: taken with the "" pass
                if _distribution(requirement.name) is not None or requirement.marker is None:
                    pending.append((requirement.name, frozenset(requirement.extras)))
    return sorted(found.values(), key=lambda d: canonicalize_name(d.metadata["Name"]))


def _editable_source(dist: md.Distribution) -> bool:
    text = dist.read_text("direct_url.json")
    if not text:
        return False
    info = json.loads(text).get("dir_info", {})
    return bool(isinstance(info, dict) and info.get("editable"))


def _place(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:  # another file system, or links not allowed: a copy
        shutil.copy2(source, target)


def _dist_files(dist: md.Distribution) -> list[tuple[Path, Path]]:
    """(source, path relative to site-packages) for each file the distribution installed into site-packages."""
    base = Path(str(dist.locate_file("")))
    pairs = []
    for item in dist.files or []:
        relative = Path(str(item))
        if relative.is_absolute() or ".." in relative.parts:
            continue  # scripts and data outside site-packages
        if relative.suffix == ".pth":
            continue  # an editable install's path hook points at the host's source tree
        source = base / relative
        if source.is_file():
            pairs.append((source, relative))
    return pairs


def _package_tree(module: str) -> list[tuple[Path, Path]]:
    """An editable distribution's import package, found where the worker imports it from."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.submodule_search_locations:
        raise RuntimeError(f"cannot find the package {module} to put in the check image")
    root = Path(spec.origin).parent
    # compiled caches included: the read-only image cannot take them, and importing the SDK without them
    # costs seconds per check
    return [(path, Path(module) / path.relative_to(root)) for path in root.rglob("*") if path.is_file()]


def build_image(directory: Path) -> Path:
    """Fill ``directory`` (made world-readable: sandboxes run as uids of their own) and return it.

    Built afresh each time, so a worker started after an SDK upgrade checks with that SDK.
    """
    site = directory / "site-packages"
    if site.exists():
        shutil.rmtree(site)
    for dist in requirement_closure():
        pairs = _dist_files(dist)
        if _editable_source(dist):
            pairs += _package_tree(canonicalize_name(dist.metadata["Name"]).replace("-", "_"))
        for source, relative in pairs:
            _place(source, site / relative)
    (directory / "wheels").mkdir(exist_ok=True)
    _open_to_everyone(directory)
    return directory


def _open_to_everyone(directory: Path) -> None:
    for path in [directory, *directory.rglob("*")]:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            continue
        wanted = mode | stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
        if stat.S_ISDIR(mode):
            wanted |= stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
        if wanted != mode:
            path.chmod(stat.S_IMODE(wanted))
