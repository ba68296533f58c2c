"""HumanEval: the model writes a Python function; its unit tests run in a sandbox.

The 164 problems ship inside the package (``data/HumanEval.jsonl.gz``, MIT,
see NOTICE). Each rollout asks for its sandbox before the model's turn, so the
sandbox starts while the model writes. When the turn is over, the program
(the prompt with the model's function) and the problem's tests run there; the
reward is the fraction of the tests that pass (``all_tests_passed`` is the
classic pass/fail). A sandbox that fails is an infrastructure error, not a
wrong answer: the rollout carries the ``SandboxError`` in ``state["error"]``
(so it is counted once and can be masked); vf-eval does not score such a rollout (reward 0, no
metrics), and a caller that scores it anyway sees the ``sandbox_failed`` metric at 1.
"""

from __future__ import annotations

import gzip
import json
import re
from importlib.resources import files
from typing import Any

from datasets import Dataset

import verifiers as vf
from verifiers.envs.code_env import all_tests_passed, pass_rate
from verifiers.envs.code_env import extract_code as extract_code  # kept importable from here
from verifiers.errors import SandboxError, UsageError

SYSTEM_PROMPT = (
    "Complete the Python function below. Reply with the complete function (its imports and any helpers "
    "included) in one ```python code block."
)


def read_problems() -> list[dict[str, Any]]:
    """The 164 problems as in the upstream file: task_id, prompt, entry_point, canonical_solution, test."""
    data = files("humaneval").joinpath("data", "HumanEval.jsonl.gz").read_bytes()
    return [json.loads(line) for line in gzip.decompress(data).decode("utf-8").splitlines() if line]


def build_dataset(num_examples: int = -1) -> Dataset:
    rows = read_problems()
    if num_examples != -1:
        rows = rows[:num_examples]
    return Dataset.from_list([
        {"question": row["prompt"], "answer": row["canonical_solution"], "task": "humaneval",
         "info": {"task_id": row["task_id"], "entry_point": row["entry_point"], "test_code": row["test"],
                  "prompt": row["prompt"]}}
        for row in rows
    ])


def build_program(prompt: str, code: str, entry_point: str) -> str:
    """The program to test: the model's function after the prompt (whose helpers and imports it may use).

    A reply that defines the entry point replaces the prompt's stub (given a ``pass`` body so it
    parses); a reply that is only a body completes the prompt's function.
    """
    if re.search(rf"^\s*(async\s+)?def\s+{re.escape(entry_point)}\s*\(", code, re.MULTILINE):
        return f"{prompt.rstrip()}\n    pass\n\n\n{code}\n"
    return f"{prompt}{code}\n"


class HumanEvalEnv(vf.CodeEnv):
    """A CodeEnv whose programs are the prompt's stub completed by the model's function."""

    def build_program(self, code: str, state: vf.State) -> str:
        info = state["info"]
        return build_program(info["prompt"], code, info["entry_point"])

    async def post_rollout(self, state: vf.State) -> None:
        await super().post_rollout(state)
        state["humaneval"] = state["code_tests"]  # the name this package's outputs have always used


def sandbox_failed(state: vf.State) -> float:
    """1.0 when the sandbox failed, before or during the tests (the rollout carries the error)."""
    return float(isinstance(state.get("error"), SandboxError))


def load_environment(num_examples: int = -1, system_prompt: str = SYSTEM_PROMPT,
                     timeout_per_test_seconds: float = 15.0, train_on_eval: bool = False) -> vf.Environment:
    """Build the HumanEval environment: an evaluation benchmark, with no training split of its own.

    Args:
        num_examples: use the first ``num_examples`` problems (-1 = all 164).
        system_prompt: the instruction before each function stub.
        timeout_per_test_seconds: time limit of each of a problem's tests (one assert) in the sandbox.
        train_on_eval: also offer the 164 problems as the training dataset. Off by default, so a trainer
            pointed at HumanEval by mistake refuses instead of training on what it is scored on.
    """
    if not isinstance(num_examples, int) or isinstance(num_examples, bool) or num_examples == 0 or num_examples < -1:
        raise UsageError(f"num_examples must be -1 (all) or a positive integer; got {num_examples!r}")
    if not isinstance(system_prompt, str):
        raise UsageError(f"system_prompt must be a string; got {type(system_prompt).__name__}")
    if not isinstance(timeout_per_test_seconds, (int, float)) or timeout_per_test_seconds <= 0:
        raise UsageError(f"timeout_per_test_seconds must be a positive number; got {timeout_per_test_seconds!r}")
    if not isinstance(train_on_eval, bool):
        raise UsageError(f"train_on_eval must be true or false; got {train_on_eval!r}")
    dataset = build_dataset(num_examples)
    rubric = vf.Rubric(funcs=[pass_rate, all_tests_passed, sandbox_failed], weights=[1.0, 0.0, 0.0])
    return HumanEvalEnv(dataset=dataset if train_on_eval else None, eval_dataset=dataset,
                        system_prompt=system_prompt, rubric=rubric, sandbox_name="humaneval",
                        timeout_per_test_seconds=float(timeout_per_test_seconds))
