"""Configs: one pydantic model per component, read from a TOML file plus ``dotted.key=value`` overrides.

A run's config nests the components' configs (``[model]``, ``[optimizer]``, ``[loss]``...);
every field has a description, which is also its ``--help`` line on the command line
(:func:`flat_fields` lists them). Unknown keys are errors, so a typo never passes silently.
Override values are read as TOML values when they parse as one (``3e-4``, ``true``,
``[1, 2]``, ``"text"``) and as plain strings otherwise.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin

from pydantic import BaseModel, ValidationError

from trainer_adapter.errors import TrainerConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the project runs on 3.11, the package allows 3.10
    import tomli as tomllib

C = TypeVar("C", bound=BaseModel)


@dataclass(frozen=True)
class FlatField:
    """One leaf field of a nested config, by its dotted path."""

    path: str
    type_name: str
    description: str
    default: Any


def flat_fields(model: type[BaseModel], prefix: str = "") -> list[FlatField]:
    """Every leaf field of ``model``, nested configs flattened to dotted paths, in declaration order."""
    out: list[FlatField] = []
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        nested = _config_class(info.annotation)
        if nested is not None:
            out.extend(flat_fields(nested, prefix=f"{path}."))
            continue
        out.append(FlatField(path, _type_name(info.annotation), info.description or "", info.get_default()))
    return out


def parse_override(text: str) -> tuple[str, Any]:
    """``"optimizer.lr=3e-4"`` → ``("optimizer.lr", 0.0003)``; see the module docstring for values."""
    key, sep, raw = text.partition("=")
    key = key.strip().removeprefix("--")
    if not sep or not key:
        raise TrainerConfigError(f"override {text!r} is not KEY=VALUE (e.g. optimizer.lr=3e-4)")
    return key, parse_value(raw.strip())


def parse_value(raw: str) -> Any:
    """A TOML value if ``raw`` is one, else the string itself."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def load_config(model: type[C], path: Path | None = None, overrides: dict[str, Any] | None = None) -> C:
    """Read ``path`` (TOML, or JSON when it ends in ``.json``), apply ``overrides`` (dotted keys), validate."""
    data: dict[str, Any] = {}
    if path is not None and Path(path).suffix == ".json":  # what launchers write for the processes they start
        try:
            data = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise TrainerConfigError(f"config file {path} does not exist") from None
        except json.JSONDecodeError as e:
            raise TrainerConfigError(f"config file {path} is not valid JSON: {e}") from None
    elif path is not None:
        try:
            data = tomllib.loads(Path(path).read_text())
        except FileNotFoundError:
            raise TrainerConfigError(f"config file {path} does not exist") from None
        except tomllib.TOMLDecodeError as e:
            raise TrainerConfigError(f"config file {path} is not valid TOML: {e}") from None
    known = {f.path for f in flat_fields(model)}
    for key, value in (overrides or {}).items():
        if key not in known and not any(k.startswith(f"{key}.") for k in known):
            raise TrainerConfigError(f"unknown config key {key!r}{_suggest(key, known)}")
        _set_dotted(data, key, value)
    try:
        return model.model_validate(data)
    except ValidationError as e:
        where = f" in {path}" if path else ""
        raise TrainerConfigError(f"invalid config{where}:\n{describe_validation_error(e)}") from None


def _set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    *parents, leaf = key.split(".")
    node = data
    for part in parents:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise TrainerConfigError(f"cannot set {key!r}: {part!r} is not a table")
        node = child
    node[leaf] = value


def describe_validation_error(error: ValidationError) -> str:
    """One line per error, ``  dotted.field: message``."""
    lines = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "(root)"
        lines.append(f"  {where}: {item['msg']}")
    return "\n".join(lines)


def _suggest(key: str, known: set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, sorted(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _config_class(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _type_name(annotation: Any) -> str:
    """A short name for help texts: ``int``, ``path?`` (optional), ``a|b`` (choices), ``toml`` (tables, lists)."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) is Literal:
        return "|".join(str(a) for a in get_args(annotation))
    if args and len(args) < len(get_args(annotation)):  # Optional[X]
        return f"{_type_name(args[0]) if len(args) == 1 else 'toml'}?"
    if get_origin(annotation) is not None:
        return "toml"
    return getattr(annotation, "__name__", str(annotation)).lower()


__all__ = ["FlatField", "describe_validation_error", "flat_fields", "load_config", "parse_override", "parse_value"]
