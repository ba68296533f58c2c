"""Environments written for verifiers 0.1.x score on this SDK exactly as on verifiers 0.1.5.

Each case also checks the original's own scores for the feature the env is meant to
exercise, so a scenario that silently stopped exercising it fails instead of passing.
"""

from __future__ import annotations

import pytest
from harness import EvalRun, spec_tools_policy


def _xml_math(run: EvalRun) -> None:
    assert run.metrics["correct_answer"] == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert 0.0 < min(run.metrics["format_reward_func"]) < 1.0 == max(run.metrics["format_reward_func"])
    assert run.metrics["brittle"][0] == 0.0  # a reward function that raised scores 0.0


def _tuple_game(run: EvalRun) -> None:
    assert run.metrics["turns_taken"] == [4.0, 3.0, 4.0, 1.0] * 2  # all examples, then again
    assert run.metrics["ended_cleanly"][2] == 0.0  # cut by max_turns


def _tuple_tools(run: EvalRun) -> None:
    assert run.metrics["total_tool_calls"] == [2.0, 1.0, 2.0, 0.0]
    assert run.metrics["capital_calls"] == [1.0, 0.0, 1.0, 0.0]
    assert run.metrics["tool_errors"] == [0.0, 0.0, 1.0, 0.0]


def _tuple_judge(run: EvalRun) -> None:
    assert run.metrics["judge_agrees"] == [1.0, 0.0, 0.0, 1.0]
    assert run.metrics["judge_calls_cached"] == [1.0] * 4  # second judge() call was cached


TUPLE_ERA_ENVS = [
    # (env module in tests/compat/envs, scripted policy, rollouts per example, check on the original)
    ("compat_xml_math", "echo", 1, _xml_math),
    ("compat_tuple_game", "echo", 2, _tuple_game),
    ("compat_tuple_tools", spec_tools_policy, 1, _tuple_tools),
    ("compat_tuple_judge", "echo", 1, _tuple_judge),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("env_module", "policy", "rollouts", "check"), TUPLE_ERA_ENVS, ids=[e[0] for e in TUPLE_ERA_ENVS]
)
def test_tuple_era_env_scores_as_on_0_1_5(compare_with_original, env_module, policy, rollouts, check):
    compare_with_original(env_module, "tuple", policy, check, rollouts_per_example=rollouts)


@pytest.mark.slow
def test_tool_env_with_builtin_tools_policy_scores_as_on_0_1_5(compare_with_original):
    # The server's own "tools" policy: one call per turn, arguments derived from the schema.
    def two_calls_each(run: EvalRun) -> None:
        assert run.metrics["total_tool_calls"] == [2.0, 2.0]

    compare_with_original("compat_tuple_tools", "tuple", "tools:2", two_calls_each, num_examples=2)


@pytest.mark.slow
def test_load_environment_kwargs_reach_the_env(compare_with_original):
    def cut_at_two_turns(run: EvalRun) -> None:
        assert run.metrics["turns_taken"] == [2.0, 2.0, 2.0, 1.0]

    compare_with_original("compat_tuple_game", "tuple", "echo", cut_at_two_turns, env_args={"max_turns": 2})
