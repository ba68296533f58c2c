"""The compat harness itself: its diff must catch every kind of difference it claims to."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from harness import (
    ORIGINALS,
    OUR_PYTHON,
    REPO_ROOT,
    CompatRunError,
    EvalRun,
    diff_runs,
    original_python,
    run_eval,
    spec_tools_policy,
)

from verifiers.testing import ScriptedRequest


def _run(**overrides) -> EvalRun:
    fields = dict(rewards=[1.0, 0.5], metrics={"a": [1.0, 0.0], "b": [None, 2.0]}, stop_conditions=None)
    fields.update(overrides)
    return EvalRun(**fields)


def test_identical_runs_have_no_differences():
    assert diff_runs(_run(), _run()) == []


def test_float_summation_noise_is_not_a_difference():
    assert diff_runs(_run(rewards=[0.1 + 0.2, 0.5]), _run(rewards=[0.3, 0.5])) == []


def test_each_kind_of_difference_is_reported():
    got = _run(
        rewards=[1.0, 0.25],
        metrics={"a": [1.0, 1.0], "b": [0.0, 2.0], "c": [0.0, 0.0]},
        api_notes=["evaluate() returned an awaitable"],
    )
    assert diff_runs(_run(), got) == [
        "API: evaluate() returned an awaitable",
        "reward rollout 1: expected 0.5, got 0.25",
        "metric 'c' unexpected (got [0.0, 0.0])",
        "metric 'a' rollout 1: expected 0.0, got 1.0",
        "metric 'b' rollout 0: expected None, got 0.0",
    ]


def test_missing_metric_rollout_count_and_stop_conditions_are_reported():
    assert diff_runs(_run(), _run(metrics={"a": [1.0, 0.0]})) == ["metric 'b' missing (expected [None, 2.0])"]
    assert diff_runs(_run(), _run(rewards=[1.0])) == ["rollout count: expected 2, got 1"]
    stops = diff_runs(_run(stop_conditions=["x", "y"]), _run(stop_conditions=["x", "z"]))
    assert stops == ["stop_condition: expected ['x', 'y'], got ['x', 'z']"]


def _request(*messages: dict, tools: bool = True) -> ScriptedRequest:
    offered = [{"type": "function", "function": {"name": "add", "parameters": {}}}] if tools else []
    return ScriptedRequest(kind="chat", model="m", messages=list(messages), tools=offered)


def test_spec_tools_policy_calls_the_named_tools_then_answers_with_their_results():
    user = {"role": "user", "content": json.dumps({"add": {"a": 1}, "neg": {"x": 2}})}
    first = spec_tools_policy(_request(user))
    assert [c["function"]["name"] for c in first.tool_calls] == ["add", "neg"]
    assert json.loads(first.tool_calls[1]["function"]["arguments"]) == {"x": 2}
    results = [{"role": "tool", "content": "3", "tool_call_id": "call_0"}, {"role": "tool", "content": "-2"}]
    answer = spec_tools_policy(_request(user, {"role": "assistant", "tool_calls": first.tool_calls}, *results))
    assert (answer.content, answer.tool_calls) == ("<answer>3|-2</answer>", None)


def test_spec_tools_policy_rejects_a_question_that_is_not_a_tool_spec():
    with pytest.raises(json.JSONDecodeError):
        spec_tools_policy(_request({"role": "user", "content": "what is 2+2?"}))


def test_run_eval_reports_a_failing_subprocess_with_its_stderr(tmp_path: Path):
    with pytest.raises(CompatRunError, match="No module named 'compat_no_such_env'"):
        run_eval(OUR_PYTHON, "compat_no_such_env", "tuple", "http://127.0.0.1:9/v1", tmp_path, sdk_root=REPO_ROOT)


SCRIPT = REPO_ROOT / "scripts" / "original_venv.sh"


def test_original_venv_script_requires_version_and_dir():
    proc = subprocess.run(["bash", str(SCRIPT), "0.3.0"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "usage:" in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("era", ["tuple", "state"])
def test_original_venv_script_is_idempotent(era):
    version, venv = ORIGINALS[era]
    if not original_python(era).exists():
        pytest.skip(f"{venv} not created yet (scripts/original_venv.sh {version} {venv})")
    proc = subprocess.run(["bash", str(SCRIPT), version, str(venv)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"already has verifiers=={version}" in proc.stdout
