"""Environments written for verifiers 0.3 score on this SDK exactly as on verifiers 0.3.0.

Each case also checks the original's own scores for the feature the env is meant to
exercise, so a scenario that silently stopped exercising it fails instead of passing.
"""

from __future__ import annotations

import pytest
from harness import EvalRun, spec_tools_policy


def _state_game(run: EvalRun) -> None:
    # Rollouts of one example are grouped; same-priority stop conditions are checked
    # alphabetically, so max_turns_reached wins its tie with player_said_stop.
    assert run.stop_conditions == [
        "max_turns_reached",
        "max_turns_reached",
        "player_gave_up",
        "player_gave_up",
        "max_turns_reached",
        "max_turns_reached",
        "player_said_stop",
        "player_said_stop",
    ]
    assert run.metrics["distinct_endings"] == [0.5] * 8  # group reward saw both rollouts
    assert run.metrics["cleanup_ran_before_scoring"] == [1.0] * 8


def _state_tools(run: EvalRun) -> None:
    assert run.metrics["correct"] == [1.0, 1.0, 0.0, 1.0]
    assert run.metrics["tool_calls_logged"] == [2.0, 1.0, 1.0, 1.0]
    assert run.metrics["hidden_args_hidden"] == [1.0] * 4


def _state_group(run: EvalRun) -> None:
    assert run.rewards == [1.5, 1.5, 0.0, 0.0, 2.25, 2.25, 0.0, 0.0, 0.25, 0.25]


def _state_window(run: EvalRun) -> None:
    # The model saw at most [system, newest message]; the completion is rendered from the last step.
    assert run.metrics["longest_prompt"] == [2.0, 2.0, 2.0]
    assert run.metrics["completion_messages"] == [1.0, 1.0, 1.0]
    assert run.metrics["steps_tagged"] == [1.0, 1.0, 1.0]
    assert run.rewards == [1.0, 1.0, 0.0]


STATE_ERA_ENVS = [
    # (env module in tests/compat/envs, scripted policy, rollouts per example, check on the original)
    ("compat_state_game", "echo", 2, _state_game),
    ("compat_state_tools", spec_tools_policy, 1, _state_tools),
    ("compat_state_group", "echo", 2, _state_group),
    ("compat_state_window", "echo", 1, _state_window),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("env_module", "policy", "rollouts", "check"), STATE_ERA_ENVS, ids=[e[0] for e in STATE_ERA_ENVS]
)
def test_state_era_env_scores_as_on_0_3_0(compare_with_original, env_module, policy, rollouts, check):
    compare_with_original(env_module, "state", policy, check, rollouts_per_example=rollouts)
