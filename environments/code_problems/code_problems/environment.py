"""code_problems: write a program that reads stdin and prints the answer; hidden test cases grade it.

Problems are generated procedurally (see ``problems.py``): no registry offers a
permissively licensed problem set with test cases, so each problem is a
parameterised template whose test outputs come from a reference solution.

A good answer is one complete Python 3 program in a ```python code block that
reads the input exactly as the statement describes it from standard input and
prints exactly the requested output (trailing spaces and blank lines at the
ends do not matter); it must finish each case within the time limit. The reward
is the share of hidden cases passed (``all_tests_passed`` is pass/fail). The
train and eval splits are generated from different seeds and share no prompt.
"""

from __future__ import annotations

import json
import random
from typing import Any

from datasets import Dataset

import verifiers as vf
from code_problems.problems import make_problem
from verifiers.errors import UsageError

SYSTEM_PROMPT = (
    "Solve the programming problem. Reply with one complete Python 3 program in a ```python code block; it "
    "reads standard input and writes standard output exactly in the format described."
)
_EVAL_SEED_OFFSET = 1_000_003  # the eval split's generator; the train split's is `seed` itself


def _rows(count: int, seed: int, difficulty: int, num_tests: int, exclude: set[str]) -> list[dict[str, Any]]:
    rng, rows, seen = random.Random(seed), [], set(exclude)
    attempts = 0
    while len(rows) < count:
        attempts += 1
        if attempts > 50 * count:
            raise UsageError(f"could not generate {count} distinct problems at difficulty {difficulty}")
        problem = make_problem(rng, difficulty, num_tests)
        if problem["statement"] in seen:
            continue
        seen.add(problem["statement"])
        rows.append({"question": problem["statement"], "answer": "", "task": "code_problems",
                     "info": {"template": problem["template"], "params": json.dumps(problem["params"]),
                              "test_cases": problem["test_cases"]}})
    return rows


def build_datasets(num_train_examples: int, num_eval_examples: int, seed: int, difficulty: int,
                   num_tests: int) -> tuple[Dataset, Dataset]:
    """Train and eval splits with no statement in both (the eval split is made first and excluded)."""
    evaluation = _rows(num_eval_examples, seed + _EVAL_SEED_OFFSET, difficulty, num_tests, set())
    train = _rows(num_train_examples, seed, difficulty, num_tests, {r["question"] for r in evaluation})
    return Dataset.from_list(train), Dataset.from_list(evaluation)


def _positive_int(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise UsageError(f"{name} must be a positive integer; got {value!r}")


def load_environment(num_train_examples: int = 1000, num_eval_examples: int = 100, seed: int = 0,
                     difficulty: int = 1, num_tests: int = 8, timeout_per_test_seconds: float = 5.0,
                     system_prompt: str = SYSTEM_PROMPT) -> vf.Environment:
    """Build the environment.

    Args:
        num_train_examples: problems in the training split.
        num_eval_examples: problems in the evaluation split (none of them in the training split).
        seed: seeds both splits' generators (same seed, same problems).
        difficulty: 1 (small inputs) to 3 (large inputs).
        num_tests: hidden test cases per problem (one more, shown as the example, is not graded).
        timeout_per_test_seconds: time limit of one test case in the sandbox.
        system_prompt: the instruction before each problem.
    """
    _positive_int("num_train_examples", num_train_examples)
    _positive_int("num_eval_examples", num_eval_examples)
    _positive_int("num_tests", num_tests)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise UsageError(f"seed must be an integer; got {seed!r}")
    if difficulty not in (1, 2, 3) or isinstance(difficulty, bool):
        raise UsageError(f"difficulty must be 1, 2 or 3; got {difficulty!r}")
    if not isinstance(timeout_per_test_seconds, (int, float)) or timeout_per_test_seconds <= 0:
        raise UsageError(f"timeout_per_test_seconds must be a positive number; got {timeout_per_test_seconds!r}")
    if not isinstance(system_prompt, str):
        raise UsageError(f"system_prompt must be a string; got {type(system_prompt).__name__}")
    train, evaluation = build_datasets(num_train_examples, num_eval_examples, seed, difficulty, num_tests)
    return vf.CodeEnv(dataset=train, eval_dataset=evaluation, system_prompt=system_prompt,
                      sandbox_name="code-problems", timeout_per_test_seconds=float(timeout_per_test_seconds))
