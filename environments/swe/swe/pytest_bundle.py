"""pytest for the sandbox, taken from this Python environment rather than shipped in the package.

The local sandbox runs the host's ``/usr/bin/python3``, which has no pytest. The environment depends on
pytest, so the installed copy is here; its pure-Python modules (pytest and what it imports at run time) are
packed once into a tar archive, unpacked into each instance's image (:mod:`swe.image`), which is on the
sandbox's ``PYTHONPATH``, and by the dataset build. No ``.dist-info`` goes with them, so no third-party
pytest plugin is loaded in the sandbox.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import tarfile
from pathlib import Path

# pygments is optional at run time (only colour output uses it; the command asks for none).
MODULES = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "py")


def _module_paths(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"{name} is not installed here; the swe environment needs pytest and its dependencies")
    origin = Path(spec.origin)
    return origin.parent if spec.submodule_search_locations else origin


def _skip_caches(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    return None if "__pycache__" in info.name.split("/") else info


@functools.cache
def pytest_archive() -> bytes:
    """A gzipped tar of the pytest modules, their names at the archive's top level."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name in MODULES:
            path = _module_paths(name)
            tar.add(path, arcname=path.name, filter=_skip_caches)
    return buffer.getvalue()


def extract_to(directory: Path) -> Path:
    """Unpack the archive into ``directory`` (for running the same pytest on the host, as the build does)."""
    with tarfile.open(fileobj=io.BytesIO(pytest_archive()), mode="r:gz") as tar:
        tar.extractall(directory, filter="data")
    return directory
