"""Loading the run's environments: one as it is, several as an EnvGroup with task weights."""

from __future__ import annotations

import pytest

import verifiers as vf
from trainer_adapter.errors import TrainerConfigError
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


def test_names_must_be_unique_and_match_the_rows_tasks() -> None:
    with pytest.raises(TrainerConfigError, match="unique"):
        load_env_mix([EnvConfig(id="arithmetic", args=SMALL), EnvConfig(id="arithmetic", args=SMALL)])
    # arithmetic labels its rows task = "arithmetic": another name would run every row in the wrong environment
    with pytest.raises(TrainerConfigError, match=r"rows with task \['arithmetic'\] match no environment name"):
        load_env_mix([EnvConfig(id="arithmetic", args=SMALL, name="sums"), EnvConfig(id="reverse-text", args=SMALL)])


def test_bad_entries_are_rejected() -> None:
    with pytest.raises(TrainerConfigError, match="needs an id"):
        load_env_mix([EnvConfig()])
    with pytest.raises(vf.errors.EnvironmentNotFoundError):
        load_env_mix([EnvConfig(id="no-such-env-here")])
    with pytest.raises(ValueError, match="greater than 0"):
        EnvConfig(id="arithmetic", weight=0)
