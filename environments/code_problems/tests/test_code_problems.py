"""Tests for code_problems: generation, honest splits, bad arguments and graded rollouts in real sandboxes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from code_problems import load_environment
from code_problems import problems as problems_module
from openai import AsyncOpenAI

from verifiers.errors import UsageError
from verifiers.testing import Reply, ScriptedServer

SOURCE = Path(problems_module.__file__).read_text()


def reference_program(info: dict) -> str:
    """A program that runs the template's own reference solution on its stdin (the generator's source inlined)."""
    call = (f"\nimport sys\n_t = next(t for t in TEMPLATES if t.name == {info['template']!r})\n"
            f"print(_t.solve(sys.stdin.read(), {json.loads(info['params'])!r}))\n")
    return f"```python\n{SOURCE}{call}```"


def serving(env, make_reply) -> ScriptedServer:
    rows = {r["prompt"][-1]["content"]: r["info"] for r in env.get_eval_dataset()}
    return ScriptedServer(lambda request: Reply(make_reply(rows[request.last_user_text])), port=0)


async def _rollouts(make_reply, num_examples: int = 4, **env_args):
    env = load_environment(num_eval_examples=num_examples, num_train_examples=10, **env_args)
    with serving(env, make_reply).running() as url:
        client = AsyncOpenAI(base_url=url, api_key="x", max_retries=0)
        outputs = await env.evaluate(client, "m", num_examples=num_examples, rollouts_per_example=1)
    return outputs.state


def test_splits_are_disjoint_seeded_and_sized() -> None:
    env = load_environment(num_train_examples=300, num_eval_examples=60, difficulty=2)
    train = {r["prompt"][-1]["content"] for r in env.get_dataset()}
    evaluation = {r["prompt"][-1]["content"] for r in env.get_eval_dataset()}
    assert len(train) == 300 and len(evaluation) == 60 and not train & evaluation
    again = load_environment(num_train_examples=300, num_eval_examples=60, difficulty=2)
    assert [r["prompt"] for r in again.get_eval_dataset()] == [r["prompt"] for r in env.get_eval_dataset()]
    other = load_environment(num_train_examples=300, num_eval_examples=60, difficulty=2, seed=1)
    assert {r["prompt"][-1]["content"] for r in other.get_eval_dataset()} != evaluation
    assert {r["info"]["template"] for r in env.get_dataset()} == {t.name for t in problems_module.TEMPLATES}
    assert all(len(r["info"]["test_cases"]) == 8 for r in env.get_eval_dataset())
    assert env.oai_tools == []


def test_difficulty_scales_the_inputs() -> None:
    def longest(difficulty: int) -> int:
        env = load_environment(num_train_examples=1, num_eval_examples=100, difficulty=difficulty)
        return max(len(c["input"]) for r in env.get_eval_dataset() for c in r["info"]["test_cases"])
    assert longest(1) < longest(3)


@pytest.mark.parametrize("args", [{"num_train_examples": 0}, {"num_eval_examples": "5"}, {"num_tests": -1},
                                  {"seed": 1.5}, {"difficulty": 4}, {"difficulty": True},
                                  {"timeout_per_test_seconds": 0}, {"system_prompt": None}])
def test_bad_arguments_are_refused(args: dict) -> None:
    with pytest.raises(UsageError):
        load_environment(**args)


async def test_reference_programs_score_one_and_wrong_ones_less() -> None:
    states = await _rollouts(reference_program, num_examples=30, difficulty=3)
    assert len({s["info"]["template"] for s in states}) == len(problems_module.TEMPLATES)
    assert [s["reward"] for s in states] == [1.0] * 30
    assert all(s["metrics"]["all_tests_passed"] == 1.0 and s["error"] is None for s in states)

    def first_case_only(info: dict) -> str:  # right for the first hidden case, wrong elsewhere
        case = info["test_cases"][0]
        return f"```python\nprint({case['output']!r} if open(0).read() == {case['input']!r} else 'no')\n```"

    states = await _rollouts(first_case_only)
    assert all(0.0 < s["reward"] < 1.0 and s["metrics"]["all_tests_passed"] == 0.0 for s in states)
    states = await _rollouts(lambda info: "I cannot solve this.", num_examples=2)
    assert [s["reward"] for s in states] == [0.0, 0.0] and all(s["error"] is None for s in states)


def vf_eval(url: str, workdir: Path, *args: str) -> Path:
    """Run the vf-eval CLI as a user would (a subprocess); the run's output folder."""
    repo = Path(__file__).resolve().parents[3]
    command = [sys.executable, "-m", "verifiers.cli.vf_eval", "code_problems", "-m", "scripted", "-b", url, *args]
    environ = {**os.environ, "PYTHONPATH": str(repo), "COLUMNS": "200"}
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=300, env=environ)
    assert done.returncode == 0, done.stdout + done.stderr
    return next((workdir / "outputs" / "evals").glob("*/*"))


@pytest.mark.slow
def test_vf_eval_runs_code_problems_end_to_end(tmp_path: Path) -> None:
    with serving(load_environment(), reference_program).running() as url:
        run = vf_eval(url, tmp_path, "-n", "5", "-r", "2")
    results = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert len(results) == 10 and {r["reward"] for r in results} == {1.0}
    assert json.loads((run / "metadata.json").read_text())["error_counts"] == {}
