"""An environment's own evaluation defaults: the ``[tool.verifiers.eval]`` table of its ``pyproject.toml``.

``vf-init`` writes the table; ``vf-eval`` uses it for the flags the user did not give
(flag > table > built-in default). The ``pyproject.toml`` is found where a developer
has it: the folder a distribution was installed from (``pip install -e`` or a local
path, read from its ``direct_url.json``), or the folder the module is imported from
(``./environments/<module>``). A wheel installed from an index carries no
``pyproject.toml``, so there the built-in defaults apply.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from verifiers.errors import UsageError
from verifiers.loading import local_module_dir, parse_env_id

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the backport, a dependency there
    import tomli as tomllib

logger = logging.getLogger("verifiers.eval")

EVAL_DEFAULT_KEYS = ("num_examples", "rollouts_per_example", "max_concurrent", "max_tokens", "temperature",
                     "sampling_args")


def _install_dir(distribution: str) -> Path | None:
    try:
        text = importlib.metadata.distribution(distribution).read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    url = urlparse(json.loads(text).get("url", ""))
    return Path(unquote(url.path)) if url.scheme == "file" else None


def _module_dirs(module: str) -> list[Path]:
    local = local_module_dir(module)
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    origin = Path(spec.origin).parent if spec is not None and spec.origin else None
    # A package module sits one folder deeper than its pyproject.toml (env/env/__init__.py).
    found = [local] if local is not None else []
    if origin is not None:
        found += [origin, origin.parent]
    return found


def find_pyproject(env_id: str) -> Path | None:
    """The ``pyproject.toml`` of the environment ``env_id``'s source folder, if this machine has one."""
    env = parse_env_id(env_id)
    installed = _install_dir(env.distribution)
    for folder in ([installed] if installed else []) + _module_dirs(env.module):
        candidate = folder / "pyproject.toml"
        if candidate.is_file() and _names(candidate, env.distribution):
            return candidate
    return None


def _names(pyproject: Path, distribution: str) -> bool:
    """Whether ``pyproject`` is the project ``distribution`` (not an unrelated project above it)."""
    name = _read(pyproject).get("project", {}).get("name", "")
    return isinstance(name, str) and name.lower().replace("_", "-").replace(".", "-") == distribution


def _read(pyproject: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise UsageError(f"cannot read {pyproject}: {error}") from error


@dataclass(frozen=True)
class EvalDefaults:
    """The values of one ``[tool.verifiers.eval]`` table and the file they came from."""

    values: dict[str, Any] = field(default_factory=dict)
    source: Path | None = None


def eval_defaults(env_id: str) -> EvalDefaults:
    """The ``[tool.verifiers.eval]`` values vf-eval understands (unknown keys are logged and ignored)."""
    pyproject = find_pyproject(env_id)
    if pyproject is None:
        return EvalDefaults()
    table = _read(pyproject).get("tool", {}).get("verifiers", {}).get("eval", {})
    if not isinstance(table, dict):
        raise UsageError(f"{pyproject}: [tool.verifiers.eval] must be a table, got {type(table).__name__}")
    unknown = sorted(set(table) - set(EVAL_DEFAULT_KEYS))
    if unknown:
        logger.warning("%s: ignoring [tool.verifiers.eval] keys vf-eval does not know: %s", pyproject,
                       ", ".join(unknown))
    return EvalDefaults({key: table[key] for key in EVAL_DEFAULT_KEYS if key in table}, pyproject)


__all__ = ["EVAL_DEFAULT_KEYS", "EvalDefaults", "eval_defaults", "find_pyproject"]
