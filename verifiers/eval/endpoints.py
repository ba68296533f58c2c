"""Where a model is served: named endpoints (``-e``), provider shortcuts (``-p``), and how they combine.

An endpoint registry names model servers, so ``vf-eval ENV -m fast`` can stand for a
model id, a base URL and the variable that holds the key. Two forms are read:

* TOML (``endpoints.toml``), read as data: one table per name, ``[fast]`` with
  ``model``, ``url`` and ``key``; or the 0.3.0 form, ``[[endpoint]]`` entries that
  carry ``endpoint_id`` besides those three.
* Python (``endpoints.py``), the classic form: the file defines
  ``ENDPOINTS = {"fast": {"model": ..., "url": ..., "key": ...}}``. Loading it *runs
  the file*, so point ``-e`` only at a file of your own.

Without ``-e``, ``./configs/endpoints.toml`` and then ``./configs/endpoints.py`` are
tried, and having neither is fine; a path given with ``-e`` must exist. A model name
the registry does not hold is sent as given.

Precedence, from strongest: an explicit ``-b``/``-k`` (on the command line or in
a config file), then ``-p``'s URL and key, then the registry entry's, then the
built-in defaults. The registry alone renames the model.
"""

from __future__ import annotations

import logging
import runpy
import sys
from pathlib import Path
from typing import Any

from verifiers.errors import UsageError
from verifiers.eval.config import EvalConfig, check_base_url
from verifiers.eval.providers import PROVIDERS, Endpoint

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the backport, a dependency there
    import tomli as tomllib

logger = logging.getLogger("verifiers.eval")

DEFAULT_REGISTRIES = (Path("configs/endpoints.toml"), Path("configs/endpoints.py"))
_ENTRY_KEYS = ("model", "url", "key")


def find_registry(path: Path | None) -> Path | None:
    """The registry file to read: ``path`` (a file, or a folder holding one), else a default one if present."""
    if path is None:
        return next((p for p in DEFAULT_REGISTRIES if p.is_file()), None)
    if path.is_dir():
        found = next((path / p.name for p in DEFAULT_REGISTRIES if (path / p.name).is_file()), None)
        if found is None:
            raise UsageError(f"-e/--endpoints-path: {path} holds no endpoints.toml or endpoints.py")
        return found
    if not path.is_file():
        raise UsageError(f"-e/--endpoints-path: {path} does not exist")
    return path


def load_endpoints(path: Path) -> dict[str, Endpoint]:
    """The endpoints of the registry file ``path`` (``.toml`` read as data, ``.py`` executed)."""
    if path.suffix == ".py":
        raw = _python_registry(path)
    elif path.suffix == ".toml":
        raw = _toml_registry(path)
    else:
        raise UsageError(f"{path}: an endpoints registry is a .toml or a .py file")
    return {name: _endpoint(path, name, entry) for name, entry in raw.items()}


def _python_registry(path: Path) -> dict[str, Any]:
    try:
        namespace = runpy.run_path(str(path))
    except Exception as error:  # the user's own code: any failure is theirs to see, in one line
        raise UsageError(f"{path}: running the endpoints registry failed: {type(error).__name__}: {error}") from None
    endpoints = namespace.get("ENDPOINTS")
    if not isinstance(endpoints, dict):
        raise UsageError(f"{path}: must define ENDPOINTS as a dict of name -> {{model, url, key}}")
    return endpoints


def _toml_registry(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise UsageError(f"cannot read {path}: {error}") from None
    entries = data.pop("endpoint", [])
    if not isinstance(entries, list):
        raise UsageError(f"{path}: 'endpoint' must be [[endpoint]] entries, each with an endpoint_id")
    for index, entry in enumerate(entries):
        name = entry.get("endpoint_id") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            raise UsageError(f"{path}: [[endpoint]] number {index + 1} needs a non-empty endpoint_id")
        if name in data:
            # 0.3.0 lists one name several times to spread load; this client talks to one server
            logger.warning("%s: endpoint %r is listed more than once; using its first entry", path, name)
            continue
        data[name] = {k: v for k, v in entry.items() if k != "endpoint_id"}
    return data


def _endpoint(path: Path, name: str, entry: Any) -> Endpoint:
    where = f"{path}: endpoint {name!r}"
    if not isinstance(entry, dict):
        raise UsageError(f"{where} must be a table of {', '.join(_ENTRY_KEYS)}")
    unknown = sorted(set(entry) - set(_ENTRY_KEYS))
    if unknown:
        raise UsageError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_ENTRY_KEYS)})")
    for key in _ENTRY_KEYS:
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise UsageError(f"{where}: {key!r} must be a non-empty string")
    try:
        url = check_base_url(entry["url"])
    except ValueError as error:
        raise UsageError(f"{where}: 'url' {error}") from None
    return Endpoint(entry["model"], url, entry["key"])


def resolve_endpoint(config: EvalConfig) -> EvalConfig:
    """``config`` with its model, base URL and key variable resolved through the registry and ``provider``.

    Fields the config was given explicitly (``model_fields_set``) keep their values, except that
    a registry name in ``model`` becomes the registry's model id.
    """
    registry = find_registry(config.endpoints_path)
    entry = load_endpoints(registry).get(config.model) if registry is not None else None
    update: dict[str, Any] = {}
    if entry is not None:
        update = {"model": entry.model, "api_base_url": entry.url, "api_key_var": entry.key}
    if config.provider is not None:
        provider = PROVIDERS[config.provider]
        update |= {"api_base_url": provider.url, "api_key_var": provider.key}
    for explicit in ("api_base_url", "api_key_var"):
        if explicit in config.model_fields_set:
            update.pop(explicit, None)
    if not update:
        return config
    return EvalConfig.model_validate({**config.model_dump(), **update})


__all__ = ["DEFAULT_REGISTRIES", "PROVIDERS", "Endpoint", "find_registry", "load_endpoints", "resolve_endpoint"]
