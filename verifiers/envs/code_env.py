"""``CodeEnv``: the model writes a program; after its turn the program runs against the row's test cases.

Each rollout gets a sandbox (asked for before the model's turn, so it starts
while the model writes). When the turn is over, the last fenced code block of
the reply is run against the row's tests in that sandbox, each case with its
own time limit and a cap on the output it may write. The reward is the share of
cases passed; ``all_tests_passed`` is the pass/fail metric. Two kinds of test
case, chosen per row in ``info``:

- function-call asserts (HumanEval style): ``info["test_code"]`` defines
  ``check(candidate)``, whose ``assert`` statements are the cases, and
  ``info["entry_point"]`` names the function under test;
- stdin/stdout (competitive-programming style): ``info["test_cases"]`` is a
  list of ``{"input": str, "output": str}``; the program reads the input and
  its output must equal the expected one after whitespace normalisation.

A sandbox that fails is an infrastructure error, not a wrong program: the
rollout carries the ``SandboxError`` in ``state["error"]``.

Example::

    env = vf.CodeEnv(eval_dataset=rows, timeout_per_test_seconds=5)
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from datasets import Dataset

from verifiers.envs.sandbox_env import SandboxEnv
from verifiers.errors import SandboxError, UsageError
from verifiers.rubrics.rubric import Rubric
from verifiers.sandboxes import CommandTimeoutError
from verifiers.state import State

_CODE_BLOCK = re.compile(r"```(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL)
_HARNESS = (Path(__file__).parent / "code_harness.py").read_bytes()
_WORKDIR = "/workspace/code"
_SLACK_SECONDS = 10.0  # start-up of the harness itself, on top of the per-case limits


def extract_code(text: str) -> str:
    """The last fenced code block of the reply, or the whole reply when it has none."""
    blocks = _CODE_BLOCK.findall(text or "")
    return blocks[-1] if blocks else (text or "")


def parse_report(stdout: str) -> dict[str, Any]:
    """``passed``, ``total`` and ``timed_out`` from the harness's report; a cut-off run counts what it reported."""
    result: dict[str, Any] = {"passed": 0, "total": 0, "timed_out": False}
    for line in stdout.splitlines():
        if line.startswith("total "):
            result["total"] = int(line.split()[1])
        elif line == "pass":
            result["passed"] += 1
        elif line == "timeout":
            result["timed_out"] = True
    return result


def case_kind(info: Any) -> str:
    """``"function"`` or ``"stdio"``: the kind of test cases a row carries; UsageError when it has none."""
    info = info if isinstance(info, dict) else {}
    cases = info.get("test_cases")
    if cases:
        if not isinstance(cases, list) or not all(
                isinstance(c, dict) and isinstance(c.get("input"), str) and isinstance(c.get("output"), str)
                for c in cases):
            raise UsageError('info["test_cases"] must be a list of {"input": str, "output": str}')
        return "stdio"
    code, entry_point = info.get("test_code"), info.get("entry_point")
    if isinstance(code, str) and re.search(r"^def check\(", code, re.MULTILINE) and "assert" in code:
        if not isinstance(entry_point, str) or not entry_point.isidentifier():
            raise UsageError('a row with info["test_code"] needs info["entry_point"], the function to test')
        return "function"
    raise UsageError('a CodeEnv row needs tests: info["test_cases"] (stdin/stdout) or info["test_code"] '
                     'defining check(candidate) with asserts, plus info["entry_point"]')


def pass_rate(state: State) -> float:
    """Share of the row's test cases the program passes."""
    result = state.get("code_tests") or {}
    return result["passed"] / result["total"] if result.get("total") else 0.0


def all_tests_passed(state: State) -> float:
    """1.0 when every test case passes."""
    result = state.get("code_tests") or {}
    return float(bool(result.get("total")) and result["passed"] == result["total"])


class CodeEnv(SandboxEnv):
    """Single-turn by default: the model answers with a program, ``post_rollout`` tests it in the sandbox.

    Args:
        timeout_per_test_seconds: time limit of one test case.
        max_output_bytes: the most a program may write per case (stdin/stdout) or in all (function);
            more fails the case.
        rubric: defaults to :func:`pass_rate` (weight 1) and :func:`all_tests_passed` (weight 0).
        **kwargs: :class:`SandboxEnv`'s arguments (``max_turns`` defaults to 1).

    Every row of the datasets must carry tests (see the module docstring); one without is refused here.
    Override :meth:`build_program` to wrap the model's code (for example, after a prompt's stub).
    """

    def __init__(self, timeout_per_test_seconds: float = 10.0, max_output_bytes: int = 1_000_000,
                 rubric: Rubric | None = None, **kwargs: Any) -> None:
        if not isinstance(timeout_per_test_seconds, (int, float)) or timeout_per_test_seconds <= 0:
            raise UsageError(f"timeout_per_test_seconds must be a positive number; got {timeout_per_test_seconds!r}")
        if not isinstance(max_output_bytes, int) or max_output_bytes <= 0:
            raise UsageError(f"max_output_bytes must be a positive integer; got {max_output_bytes!r}")
        for split in ("dataset", "eval_dataset"):
            rows = kwargs.get(split)
            if isinstance(rows, Dataset):
                for index, row in enumerate(rows):
                    try:
                        case_kind(row.get("info"))
                    except UsageError as error:
                        raise UsageError(f"{split} row {index}: {error}") from None
        kwargs.setdefault("sandbox_name", "code-env")
        kwargs.setdefault("memory_gb", 1)
        kwargs.setdefault("disk_size_gb", 0.25)
        kwargs.setdefault("max_turns", 1)
        rubric = rubric or Rubric(funcs=[pass_rate, all_tests_passed], weights=[1.0, 0.0])
        super().__init__(rubric=rubric, timeout_per_command_seconds=timeout_per_test_seconds, **kwargs)
        self.timeout_per_test_seconds = float(timeout_per_test_seconds)
        self.max_output_bytes = max_output_bytes
        self.remove_tool(self.bash)  # the model answers in text; only the grader uses the sandbox

    def build_program(self, code: str, state: State) -> str:
        """The program to test, from the reply's code; override to add a prompt's stub or helpers."""
        return code

    def harness_command(self, state: State, program: str) -> tuple[str, dict[str, bytes], int]:
        """The harness command line, the files it needs, and how many cases it runs."""
        info = state["info"]
        limits = f"{self.timeout_per_test_seconds} {self.max_output_bytes}"
        if case_kind(info) == "stdio":
            cases = [{"input": c["input"], "output": c["output"]} for c in info["test_cases"]]
            files = {"program.py": program.encode(), "cases.json": json.dumps(cases).encode()}
            return f"python3 harness.py stdio program.py cases.json {limits}", files, len(cases)
        files = {"program.py": program.encode(), "tests.py": info["test_code"].encode()}
        # One case per assert at most; loading the program gets a limit of its own.
        cases = info["test_code"].count("assert") + 1
        return f"python3 harness.py function program.py tests.py {info['entry_point']} {limits}", files, cases

    async def post_rollout(self, state: State) -> None:
        """Run the reply's program against the row's tests; ``state["code_tests"]`` gets the outcome."""
        completion = state["completion"]
        reply = completion[-1].get("content") if completion else ""
        program = self.build_program(extract_code(reply if isinstance(reply, str) else ""), state)
        command, files, cases = self.harness_command(state, program)
        state["code_tests"] = parse_report("")
        sandbox_id = state["sandbox_id"]
        try:
            for name, data in {"harness.py": _HARNESS, **files}.items():
                await self.sandbox_client.upload_bytes(sandbox_id, f"{_WORKDIR}/{name}", data)
            limit = cases * self.timeout_per_test_seconds + _SLACK_SECONDS
            try:
                response = await self.run_command(sandbox_id, state["sandbox_state"], command,
                                                  working_dir=_WORKDIR, timeout=limit)
                stdout = response.stdout
            except CommandTimeoutError as timeout:  # a case that would not stop: count what was reported
                stdout = (timeout.response.stdout if timeout.response else "") + "\ntimeout"
        except SandboxError as error:
            state["error"] = error  # infrastructure, not the model: counted, and masked by consumers
            self.logger.warning("CodeEnv sandbox failed: %r", error)
            return
        state["code_tests"] = parse_report(stdout)


__all__ = ["CodeEnv", "all_tests_passed", "extract_code", "parse_report", "pass_rate", "case_kind"]
