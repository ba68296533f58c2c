"""Every TOML under configs/ validates against the config model of the command it is for."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from trainer_adapter.config import load_config
from trainer_adapter.main_job_config import MainJobConfig
from trainer_adapter.rl_run import RLRunConfig
from trainer_adapter.train.config import SFTConfig
from verifiers.eval.config import EvalConfig
from verifiers.eval.config_file import load_eval_file
from verifiers.eval.endpoints import load_endpoints

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _evals(path: Path) -> None:
    for fields in load_eval_file(path):
        EvalConfig(**fields)
        endpoints = fields.get("endpoints_path")
        if endpoints is not None:  # a named model must be in the registry the file points at
            assert fields["model"] in load_endpoints(Path(endpoints)), (path, fields["model"])


def _endpoints(path: Path) -> None:
    assert load_endpoints(path), path


def _trainer(model: type) -> Callable[[Path], object]:
    return lambda path: load_config(model, path)


def validator(path: Path) -> Callable[[Path], object] | None:
    """How the command that reads ``path`` checks it (None: no command reads such a file)."""
    relative = path.relative_to(CONFIGS)
    if relative == Path("endpoints.toml"):
        return _endpoints
    if relative.parts[0] == "eval":
        return _evals
    by_name = {"sft.toml": SFTConfig, "rl.toml": RLRunConfig, "main.toml": MainJobConfig, "tiny.toml": MainJobConfig,
               "gpu.toml": MainJobConfig}
    return _trainer(by_name[path.name]) if path.name in by_name else None


def test_every_shipped_config_has_a_known_command() -> None:
    paths = sorted(CONFIGS.rglob("*.toml"))
    assert paths and [path for path in paths if validator(path) is None] == []


@pytest.mark.parametrize("path", sorted(CONFIGS.rglob("*.toml")), ids=lambda p: str(p.relative_to(CONFIGS)))
def test_a_shipped_config_validates(path: Path) -> None:
    check = validator(path)
    assert check is not None, path
    check(path)


def test_the_mixed_runs_warm_start_sees_the_rows_rl_trains_on() -> None:
    sft = load_config(SFTConfig, CONFIGS / "mix" / "sft.toml")
    rl = load_config(RLRunConfig, CONFIGS / "mix" / "rl.toml")
    by_id = {entry.id: (entry.weight, entry.args) for entry in rl.envs}
    assert {entry.id: (entry.weight, entry.args) for entry in sft.data.envs} == by_id
