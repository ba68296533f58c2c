"""Every environment package keeps its train and eval rows apart: no prompt is in both splits.

An environment either has disjoint train and eval splits or is evaluation-only (no training dataset, so a
trainer refuses it instead of training on what it is scored on). Each is loaded by name with its defaults,
as ``vf-eval NAME`` and ``vf-train`` load it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomllib

import verifiers as vf

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = sorted(p.parent.name for p in (ROOT / "environments").glob("*/pyproject.toml"))
EVAL_ONLY = {"math500", "humaneval"}


def env_id(package: str) -> str:
    return tomllib.loads((ROOT / "environments" / package / "pyproject.toml").read_text())["project"]["name"]


def prompt_key(row: dict) -> str:
    """What the model is shown: the prompt messages, as text."""
    return json.dumps(row["prompt"], sort_keys=True, ensure_ascii=False)


def test_every_package_is_covered() -> None:
    expected = {"gsm8k", "math500", "humaneval", "science", "logic", "reverse_text", "arithmetic", "multiply_tool",
                "deep_research", "swe", "code_problems"}
    assert expected <= set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_prompt_in_both_splits(package: str) -> None:
    env = vf.load_environment(env_id(package))
    evaluation = {prompt_key(r) for r in env.get_eval_dataset()}
    assert evaluation, f"{package} has no eval rows"
    if package in EVAL_ONLY:
        assert env.dataset is None, f"{package} is an eval benchmark but offers its rows for training"
        return
    train = {prompt_key(r) for r in env.get_dataset()}
    shared = train & evaluation
    assert not shared, f"{package}: {len(shared)} prompts in both splits, e.g. {sorted(shared)[0][:300]}"
