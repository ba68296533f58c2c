"""Tests for the humaneval environment: bundled data, program assembly, and graded rollouts in real sandboxes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from humaneval import load_environment
from humaneval.environment import build_program, extract_code, read_problems
from openai import AsyncOpenAI

from verifiers.errors import SandboxError, UsageError
from verifiers.testing import Reply, ScriptedServer

PROBLEMS = {p["prompt"].strip(): p for p in read_problems()}


def answering(make_reply) -> ScriptedServer:
    """A server whose reply to each problem is ``make_reply(problem)``."""
    return ScriptedServer(lambda request: Reply(make_reply(PROBLEMS[request.last_user_text.strip()])), port=0)


def canonical(problem: dict) -> str:
    return f"Here it is:\n```python\n{problem['canonical_solution']}```"


async def _rollouts(reply, num_examples: int = 3, **env_args):
    env = load_environment(num_examples=num_examples, **env_args)
    with answering(reply).running() as url:
        client = AsyncOpenAI(base_url=url, api_key="x", max_retries=0)
        outputs = await env.evaluate(client, "m", num_examples=num_examples, rollouts_per_example=1)
    return env, outputs.state


def test_all_164_problems_ship_with_the_package() -> None:
    env = load_environment()
    rows = env.get_eval_dataset()
    assert len(rows) == 164 and rows[0]["info"]["task_id"] == "HumanEval/0"
    assert rows[0]["prompt"][-1]["content"] == read_problems()[0]["prompt"]
    assert env.oai_tools == []  # the model answers in text; only the grader uses the sandbox


def test_code_extraction_and_program_assembly() -> None:
    assert extract_code("a\n```python\nx = 1\n```\nb\n```\ny = 2\n```") == "y = 2\n"
    assert extract_code("no block") == "no block"
    prompt = 'def f(a):\n    """Doc."""\n'
    assert build_program(prompt, "    return a\n", "f") == prompt + "    return a\n\n"
    full = build_program(prompt, "def f(a):\n    return a + 1", "f")
    namespace: dict = {}
    exec(full, namespace)  # the stub gets a body, the reply's definition wins
    assert namespace["f"](1) == 2


@pytest.mark.parametrize("args", [{"num_examples": 0}, {"num_examples": "3"}, {"system_prompt": 3},
                                  {"timeout_per_test_seconds": -1}])
def test_bad_arguments_are_refused(args: dict) -> None:
    with pytest.raises(UsageError):
        load_environment(**args)


async def test_canonical_solutions_score_one_and_wrong_ones_partial() -> None:
    _, states = await _rollouts(canonical)
    assert [s["reward"] for s in states] == [1.0, 1.0, 1.0]
    assert all(s["metrics"]["all_tests_passed"] == 1.0 and s["error"] is None for s in states)
    assert all(s["metrics"]["sandbox_ready_wait_time"] >= 0 for s in states)

    def wrong_but_one(problem: dict) -> str:  # right for HumanEval/2 only
        body = "return number % 1.0 + 0.0" if problem["task_id"] == "HumanEval/2" else "return None"
        return f"```python\n    {body}\n```"

    _, states = await _rollouts(wrong_but_one)
    rewards = {s["info"]["task_id"]: s["reward"] for s in states}
    assert rewards["HumanEval/0"] < 1.0 and rewards["HumanEval/2"] == 1.0
    assert all(s["metrics"]["sandbox_failed"] == 0.0 for s in states)


async def test_runaway_and_hostile_answers_stay_in_the_sandbox(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    hostile = {
        "HumanEval/0": "```python\ndef has_close_elements(numbers, threshold):\n    while True:\n        pass\n```",
        "HumanEval/1": f"```python\nopen('{marker}', 'w').write('x')\nimport os\nos.system('cat /etc/shadow')\n"
                       "def separate_paren_groups(s):\n    return []\n```",
    }
    _, states = await _rollouts(lambda p: hostile.get(p["task_id"], canonical(p)), timeout_per_test_seconds=2)
    by_task = {s["info"]["task_id"]: s for s in states}
    assert by_task["HumanEval/0"]["humaneval"]["timed_out"] and by_task["HumanEval/0"]["reward"] == 0.0
    assert by_task["HumanEval/1"]["reward"] < 1.0 and not marker.exists()
    assert by_task["HumanEval/2"]["reward"] == 1.0
    assert all(s["error"] is None for s in states)


async def test_a_failing_sandbox_is_an_error_not_a_zero() -> None:
    kill_agent = "```python\nimport os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n```"
    _, states = await _rollouts(lambda p: kill_agent, num_examples=1)
    state = states[0]
    assert isinstance(state["error"], SandboxError)
    # an errored rollout is not scored (the error counts once, under error_counts): reward 0, no metrics
    assert state["reward"] == 0.0 and state["metrics"] == {}


@pytest.mark.slow
def test_vf_eval_runs_humaneval_end_to_end(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[3]
    with answering(canonical).running() as url:
        done = subprocess.run(
            [sys.executable, "-m", "verifiers.cli.vf_eval", "humaneval", "-m", "scripted", "-b", url,
             "-n", "4", "-r", "2"],
            cwd=tmp_path, capture_output=True, text=True, timeout=300,
            env={**os.environ, "PYTHONPATH": str(repo), "COLUMNS": "200"},
        )
    assert done.returncode == 0, done.stdout + done.stderr
    run = next((tmp_path / "outputs" / "evals").glob("*/*"))
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["avg_reward"] == 1.0 and meta["error_counts"] == {}
    assert len((run / "results.jsonl").read_text().splitlines()) == 8


def test_eval_only_unless_asked() -> None:
    """HumanEval is what models are scored on: no training rows unless train_on_eval says so."""
    env = load_environment()
    assert env.dataset is None and len(env.get_eval_dataset()) == 164
    with pytest.raises(ValueError, match="no training dataset"):
        env.get_dataset()
    assert len(load_environment(train_on_eval=True).get_dataset()) == 164
    with pytest.raises(UsageError, match="train_on_eval"):
        load_environment(train_on_eval=1)
