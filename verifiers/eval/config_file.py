"""Eval config files: ``vf-eval my_eval.toml`` reads :class:`EvalConfig` fields from a TOML file.

The top level holds the fields of one eval::

    env_id = "reverse-text"
    model = "my-model"
    num_examples = 20

or, as in the original 0.3.0, shared fields at the top and one ``[[eval]]`` table per
eval (``id`` and ``args`` are accepted for ``env_id`` and ``env_args``)::

    model = "my-model"
    [[eval]]
    env_id = "gsm8k"
    [[eval]]
    env_id = "math500"
    num_examples = 10

A relative ``endpoints_path`` is relative to the file's folder (other paths to the
working directory, as on the command line). Flags given on the command line win over
the file. An unknown key or a bad value is refused with the file and the key.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from verifiers.errors import UsageError
from verifiers.eval.config import EvalConfig, config_problems

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the backport, a dependency there
    import tomli as tomllib

_ALIASES = {"id": "env_id", "args": "env_args"}  # the original's names in [[eval]] tables


def is_config_file(env_id: str) -> bool:
    """Whether ``vf-eval``'s argument names a config file rather than an environment."""
    return env_id.endswith(".toml")


def load_eval_file(path: Path) -> list[dict[str, Any]]:
    """The evals of the config file ``path``, each the :class:`EvalConfig` fields it sets, checked."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise UsageError(f"cannot read {path}: {error}") from None
    tables = data.pop("eval", None)
    shared = _fields(path, "", data)
    if tables is None:
        return [_checked(path, "", shared)]
    if not isinstance(tables, list) or not tables:
        raise UsageError(f"{path}: 'eval' must be one or more [[eval]] tables (double brackets)")
    evals = []
    for number, table in enumerate(tables, start=1):
        where = f"[[eval]] number {number}: "
        if not isinstance(table, dict):
            raise UsageError(f"{path}: {where}must be a table")
        evals.append(_checked(path, where, {**shared, **_fields(path, where, table)}))
    return evals


def _fields(path: Path, where: str, table: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for key, value in table.items():
        name = _ALIASES.get(key, key)
        if name not in EvalConfig.model_fields:
            known = ", ".join(EvalConfig.model_fields)
            raise UsageError(f"{path}: {where}unknown key {key!r} (known: {known})")
        if name in fields:
            raise UsageError(f"{path}: {where}{key!r} and {name!r} are the same key; give one")
        fields[name] = value
    endpoints = fields.get("endpoints_path")
    if isinstance(endpoints, str) and not Path(endpoints).is_absolute():
        fields["endpoints_path"] = str(path.parent / endpoints)
    return fields


def _checked(path: Path, where: str, fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` if they make a valid eval on their own; the error names the file and each bad key."""
    if "env_id" not in fields:
        raise UsageError(f"{path}: {where}no env_id (the environment to evaluate)")
    try:
        EvalConfig(**fields)
    except ValidationError as error:
        problems = "; ".join(f"{key} {text}" for key, text in config_problems(error))
        raise UsageError(f"{path}: {where}bad value: {problems}") from None
    return fields


__all__ = ["is_config_file", "load_eval_file"]
