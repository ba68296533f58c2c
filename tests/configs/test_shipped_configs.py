"""Every TOML under configs/ validates against the config model of the command it is for."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from trainer_adapter.config import load_config
from trainer_adapter.main_job import MainJobConfig
from trainer_adapter.rl_run import RLRunConfig
from trainer_adapter.train.sft import SFTConfig

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
MODEL_BY_NAME: dict[str, type[BaseModel]] = {
    "sft.toml": SFTConfig, "rl.toml": RLRunConfig, "main.toml": MainJobConfig, "gpu.toml": MainJobConfig,
}


def test_every_shipped_config_has_a_known_command() -> None:
    names = {path.name for path in CONFIGS.rglob("*.toml")}
    assert names and names <= set(MODEL_BY_NAME), names - set(MODEL_BY_NAME)


@pytest.mark.parametrize("path", sorted(CONFIGS.rglob("*.toml")), ids=lambda p: str(p.relative_to(CONFIGS)))
def test_a_shipped_config_validates(path: Path) -> None:
    load_config(MODEL_BY_NAME[path.name], path)


def test_the_mixed_runs_warm_start_sees_the_rows_rl_trains_on() -> None:
    sft = load_config(SFTConfig, CONFIGS / "mix" / "sft.toml")
    rl = load_config(RLRunConfig, CONFIGS / "mix" / "rl.toml")
    by_id = {entry.id: (entry.weight, entry.args) for entry in rl.envs}
    assert {entry.id: (entry.weight, entry.args) for entry in sft.data.envs} == by_id
