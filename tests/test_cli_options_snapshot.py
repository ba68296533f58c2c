"""Every CLI's commands and options, frozen: a change to one shows up here as a diff to review.

A deliberate change updates the snapshot:
``VF_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/test_cli_options_snapshot.py``.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
import typer

SNAPSHOT = Path(__file__).resolve().parent / "snapshots" / "cli_options.json"
# console script -> the module whose ``app`` it runs ([project.scripts] of pyproject.toml for the SDK's, of
# distributions/hub/pyproject.toml for vf-hub, of distributions/trainer/pyproject.toml for vf-train)
CLIS = {
    "vf-eval": "verifiers.cli.vf_eval", "vf-init": "verifiers.cli.vf_init",
    "vf-scripted-server": "verifiers.cli.vf_scripted_server", "vf-tui": "verifiers.cli.vf_tui",
    "vf-hub": "hub_server.cli.vf_hub", "vf-train": "trainer_adapter.cli.vf_train",
}


# Typer vendors its own click (typer._click), so commands and parameters are read by their attributes.
def _param(param: Any, context: typer.Context) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": param.name, "kind": param.param_type_name, "opts": [*param.opts, *param.secondary_opts],
        "type": param.display_type(context), "required": param.required, "multiple": param.multiple,
        "is_flag": bool(getattr(param, "is_flag", False)),
    }
    default = param.default
    if not callable(default):
        entry["default"] = default if isinstance(default, (str, int, float, bool, type(None))) else repr(default)
    return entry


def _commands(command: Any, path: str) -> dict[str, list[dict[str, Any]]]:
    context = typer.Context(command)
    found = {path: [_param(p, context) for p in command.params if p.name != "help"]}
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        found.update(_commands(sub, f"{path} {name}"))
    return found


def current() -> dict[str, dict[str, list[dict[str, Any]]]]:
    return {script: _commands(typer.main.get_command(importlib.import_module(module).app), script)
            for script, module in CLIS.items()}


def test_the_clis_match_their_snapshot() -> None:
    now = current()
    if os.environ.get("VF_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
    frozen = json.loads(SNAPSHOT.read_text())
    for script in sorted(set(now) | set(frozen)):
        assert now.get(script) == frozen.get(script), (
            f"{script}'s commands or options changed; if that is meant, update the snapshot "
            "(VF_UPDATE_SNAPSHOTS=1) and say so in CHANGELOG.md"
        )


@pytest.mark.parametrize("script", sorted(CLIS))
def test_every_option_and_argument_has_help(script: str) -> None:
    def undocumented(command: Any, path: str) -> list[str]:
        missing = [f"{path} {p.name}" for p in command.params
                   if p.name != "help" and not (getattr(p, "help", None) or "").strip()]
        for name, sub in getattr(command, "commands", {}).items():
            missing += undocumented(sub, f"{path} {name}")
        return missing

    assert undocumented(typer.main.get_command(importlib.import_module(CLIS[script]).app), script) == []
