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
    with pytest.raises(TrainerConfigError, match="env .'no-such-env-here'.: Could not import") as raised:
        load_env_mix([EnvConfig(id="no-such-env-here")])
    assert isinstance(raised.value.__cause__, vf.errors.EnvironmentNotFoundError)
    for weight in (0, -1.5):
        with pytest.raises(ValueError, match="greater than 0"):
            EnvConfig(id="arithmetic", weight=weight)


@pytest.mark.parametrize(("bad", "message"), [
    (EnvConfig(id="no-such-env-here"), r"envs.1 \('no-such-env-here'\): Could not import"),
    (EnvConfig(id="reverse-text", args={"bogus": 1}), r"envs.1 \('reverse-text'\): .*does not take argument"),
    (EnvConfig(id="reverse-text", args={"min_len": 0}), r"envs.1 \('reverse-text'\): need 1 <= min_len"),
])
def test_a_bad_member_of_a_mix_is_named(bad: EnvConfig, message: str) -> None:
    with pytest.raises(TrainerConfigError, match=message):
        load_env_mix([EnvConfig(id="arithmetic", args=SMALL), bad])


def test_an_evaluation_only_benchmark_is_refused_unless_it_allows_training() -> None:
    with pytest.raises(TrainerConfigError, match=r"envs.1 \('math500'\) has no training dataset: .*evaluation only"):
        load_env_mix([EnvConfig(id="arithmetic", args=SMALL), EnvConfig(id="math500")])
    env, _ = load_env_mix([EnvConfig(id="math500", args={"train_on_eval": True, "num_examples": 3})])
    assert len(env.get_dataset()) == 3


def test_weights_for_a_task_not_in_the_group_are_refused(tmp_path) -> None:
    from trainer_adapter.orchestrator.orchestrator import Orchestrator, OrchestratorConfig

    env, _ = load_env_mix([EnvConfig(id="arithmetic", args=SMALL), EnvConfig(id="reverse-text", args=SMALL)])
    with pytest.raises(ValueError, match="task weight for 'reverse_text', but no example has that task"):
        Orchestrator(OrchestratorConfig(), env, [object()], [object()], tmp_path,  # type: ignore[list-item]
                     task_weights={"arithmetic": 1.0, "reverse_text": 1.0})
