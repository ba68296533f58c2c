"""Loading the run's environments: one as it is, several as an EnvGroup with task weights."""

from __future__ import annotations

from typing import Any

import pytest

import verifiers as vf
from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.orchestrator.buffer import BufferConfig, DifficultyBuffer
from trainer_adapter.orchestrator.env_mix import EnvConfig, load_env_mix

SMALL = {"num_train_examples": 8, "num_eval_examples": 2}


def test_a_single_environment_is_loaded_as_is() -> None:
    env, weights = load_env_mix([EnvConfig(id="arithmetic", args=SMALL, weight=5.0)])
    assert weights is None
    assert not isinstance(env, vf.EnvGroup) and len(env.get_dataset()) == 8


def test_several_environments_become_a_weighted_group() -> None:
    env, weights = load_env_mix([EnvConfig(id="arithmetic", args=SMALL, weight=3.0),
                                 EnvConfig(id="reverse-text", args=SMALL)])
    assert isinstance(env, vf.EnvGroup)
    assert weights == {"arithmetic": 3.0, "reverse-text": 1.0}
    assert sorted(set(env.get_dataset()["task"])) == ["arithmetic", "reverse-text"]


def test_names_must_be_unique() -> None:
    with pytest.raises(TrainerConfigError, match="unique"):
        load_env_mix([EnvConfig(id="arithmetic", args=SMALL), EnvConfig(id="arithmetic", args=SMALL)])


def _solve(request: Any) -> str:
    """Right for both environments: sums ``a+b``, reverses anything else."""
    text = request.last_user_text
    if "+" in text:
        a, b = text.split("+")
        return str(int(a) + int(b))
    return text[::-1]


async def test_a_name_other_than_the_rows_task_routes_and_scores_right(serve, client_for) -> None:
    # arithmetic labels its own rows task = "arithmetic"; the group relabels them "sums", the name they are mixed by
    env, weights = load_env_mix([EnvConfig(id="arithmetic", args=SMALL, name="sums", weight=3.0),
                                 EnvConfig(id="reverse-text", args=SMALL, name="rev")])
    assert weights == {"sums": 3.0, "rev": 1.0}
    assert sorted(set(env.get_dataset()["task"])) == ["rev", "sums"]
    buffer = DifficultyBuffer(list(range(len(env.get_dataset()))), BufferConfig(),
                              tasks=dict(enumerate(env.get_dataset()["task"])), task_weights=weights)
    assert {buffer.tasks[i] for i in buffer.sample_problems(32)} == {"sums", "rev"}
    results = await env.evaluate(client_for(serve(_solve)), "m")
    assert [o["task"] for o in results["outputs"]] == ["sums"] * 2 + ["rev"] * 2
    assert results.reward == pytest.approx([1.0] * 4)  # each row ran and was scored in its own environment


def test_bad_entries_are_rejected() -> None:
    with pytest.raises(TrainerConfigError, match="needs an id"):
        load_env_mix([EnvConfig()])
    with pytest.raises(vf.errors.EnvironmentNotFoundError):
        load_env_mix([EnvConfig(id="no-such-env-here")])
    with pytest.raises(ValueError, match="greater than 0"):
        EnvConfig(id="arithmetic", weight=0)
