"""Configs from TOML plus dotted overrides; every bad input gets a message that says how to fix it."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from trainer_adapter.config import flat_fields, load_config, parse_override
from trainer_adapter.errors import TrainerConfigError


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    lr: float = Field(1e-3, gt=0, description="Learning rate.")
    kind: Literal["a", "b"] = Field("a", description="Which kind.")


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    inner: Inner = Field(default_factory=Inner, description="Nested.")
    name: str | None = Field(None, description="A name.")
    steps: int = Field(10, description="Steps.")
    extra: dict[str, int] = Field(default_factory=dict, description="A table.")


def _toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def test_flat_fields_are_dotted_with_descriptions_and_types() -> None:
    fields = {f.path: f for f in flat_fields(Outer)}
    assert list(fields) == ["inner.lr", "inner.kind", "name", "steps", "extra"]
    assert fields["inner.lr"].description == "Learning rate." and fields["inner.lr"].type_name == "float"
    assert fields["inner.kind"].type_name == "a|b"
    assert fields["name"].type_name == "str?"
    assert fields["extra"].type_name == "toml"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("inner.lr=3e-4", ("inner.lr", 3e-4)), ("--steps=5", ("steps", 5)), ("name=run one", ("name", "run one")),
     ("name=\"quoted\"", ("name", "quoted")), ("extra={a = 1}", ("extra", {"a": 1})), ("flag=true", ("flag", True))],
)
def test_overrides_parse_as_toml_values_or_strings(text: str, expected: tuple) -> None:
    assert parse_override(text) == expected


def test_file_then_overrides(tmp_path: Path) -> None:
    path = _toml(tmp_path, 'steps = 3\n[inner]\nlr = 0.5\nkind = "b"\n')
    config = load_config(Outer, path, {"inner.lr": 0.25, "name": "x"})
    assert (config.steps, config.inner.lr, config.inner.kind, config.name) == (3, 0.25, "b", "x")
    assert load_config(Outer).steps == 10


@pytest.mark.parametrize(
    ("text", "overrides", "message"),
    [
        ("steps = 3\n", {"inner.lrr": 1.0}, "unknown config key 'inner.lrr'; did you mean 'inner.lr'"),
        ("stepz = 3\n", {}, "stepz: Extra inputs are not permitted"),
        ("steps = 'many'\n", {}, "steps: Input should be a valid integer"),
        ("[inner]\nlr = -1\n", {}, "inner.lr: Input should be greater than 0"),
        ("steps = \n", {}, "is not valid TOML"),
        ("inner = 3\n", {"inner.lr": 1.0}, "'inner' is not a table"),
    ],
)
def test_bad_configs_say_what_is_wrong(tmp_path: Path, text: str, overrides: dict, message: str) -> None:
    with pytest.raises(TrainerConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_config(Outer, _toml(tmp_path, text), overrides)


def test_missing_file_and_malformed_override(tmp_path: Path) -> None:
    with pytest.raises(TrainerConfigError, match="does not exist"):
        load_config(Outer, tmp_path / "nope.toml")
    with pytest.raises(TrainerConfigError, match="is not KEY=VALUE"):
        parse_override("steps")
