"""Answer helpers, MathRubric, JudgeRubric details, dataset builders and 0.3.0's decorators score as on the originals.

Each case also checks the original's own scores for the behaviour it probes, so a
scenario that silently stopped exercising it fails instead of passing.
"""

from __future__ import annotations

import pytest
from harness import EvalRun

from verifiers.testing import Reply
from verifiers.testing.policies import ScriptedRequest

JUDGE_MODEL = "scripted-judge"  # the judge_model of the compat_*_answers envs


def judge_keys_policy(request: ScriptedRequest) -> Reply:
    """Echo; a judge request's echo ends with ``KEYS=`` and the token-limit arguments it carried."""
    if request.model != JUDGE_MODEL:
        return Reply(request.last_user_text)
    keys = ",".join(sorted(key for key in request.sampling if key.startswith("max_")))
    return Reply(f"{request.last_user_text}\nKEYS={keys}")


def _tuple_answers(run: EvalRun) -> None:
    # extract_hash_answer gives text without "####" back unchanged (rows 2 and 5, unstripped in 5).
    assert run.metrics["hash_answer_matches"] == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert run.metrics["boxed_answer_matches"] == [0.0, 1.0, 1.0, 0.0, 0.0]
    # No <answer> parsed: the judge prompt reads "None"; the judge got max_completion_tokens.
    assert run.metrics["judge_got_none"] == [1.0, 1.0, 1.0, 0.0, 1.0]
    assert run.metrics["judge_agrees"] == [0.0, 0.0, 0.0, 1.0, 0.0]
    assert run.metrics["judge_token_limit_sent_as"] == [1.0] * 5


def _state_answers(run: EvalRun) -> None:
    assert run.metrics["hash_answer_matches"] == [1.0, 1.0, 0.0, 0.0, 0.0]
    # strict=True: "" (0.5) without a complete box, where the loose form gives the text back.
    assert run.metrics["strict_boxed"] == [0.5, 0.5, 1.0, 0.5, 0.5]
    assert run.metrics["loose_boxed"] == [0.0, 1.0, 1.0, 0.0, 0.0]
    assert run.metrics["judge_got_none"] == [1.0, 1.0, 1.0, 0.0, 1.0]
    assert run.metrics["judge_token_limit_sent_as"] == [1.0] * 5
    # @vf.cleanup(stage="group") ran for each rollout; @vf.setup (a marker only) never ran.
    assert run.metrics["cleanup_ran"] == [1.0] * 5
    assert run.metrics["tool_def_read"] == [1.0] * 5


def _state_math(run: EvalRun) -> None:
    # 0.3.0: the whole reply without </think>, but only a complete \boxed{} is an answer.
    assert run.metrics == {"correct_answer": [0.0, 1.0, 0.0, 1.0, 1.0, 0.0], "num_turns": [1.0] * 6}


def _tuple_math(run: EvalRun) -> None:
    # 0.1.x: nothing without </think>; after it, unboxed text is an answer too.
    assert run.metrics == {"correct_answer_reward_func": [0.0, 0.0, 1.0, 1.0, 1.0, 0.0]}


ANSWER_ENVS = [
    # (env module in tests/compat/envs, era, scripted policy, check on the original)
    ("compat_tuple_answers", "tuple", judge_keys_policy, _tuple_answers),
    ("compat_state_answers", "state", judge_keys_policy, _state_answers),
    ("compat_state_math", "state", "echo", _state_math),
    ("compat_tuple_math", "tuple", "echo", _tuple_math),
    ("compat_tuple_math_late", "tuple", "echo", _tuple_math),  # the rubric assigned after __init__
    ("compat_declared_math", "tuple", "echo", _tuple_math),  # no era in the code: its pyproject.toml's
]


@pytest.mark.slow
@pytest.mark.parametrize(("env_module", "era", "policy", "check"), ANSWER_ENVS, ids=[e[0] for e in ANSWER_ENVS])
def test_answer_envs_score_as_on_the_original(compare_with_original, env_module, era, policy, check):
    compare_with_original(env_module, era, policy, check)
