"""CodeEnv: programs from the scripted server graded against test cases in real local sandboxes."""

from __future__ import annotations

import time

import pytest
from datasets import Dataset
from openai import AsyncOpenAI

import verifiers as vf
from verifiers.envs.code_env import extract_code, parse_report
from verifiers.errors import SandboxError, UsageError
from verifiers.testing import Reply, ScriptedServer

ADD_TESTS = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n" \
            "    assert candidate(-1, 1) == 0\n    assert candidate(0, 0) == 0\n"
DOUBLE_CASES = [{"input": "1\n", "output": "2\n"}, {"input": "5\n", "output": "10\n"},
                {"input": "-3\n", "output": "-6\n"}, {"input": "0\n", "output": "0\n"}]


def function_row(question: str) -> dict:
    return {"question": question, "answer": "", "info": {"test_code": ADD_TESTS, "entry_point": "add"}}


def stdio_row(question: str, cases: list[dict] | None = None) -> dict:
    return {"question": question, "answer": "", "info": {"test_cases": cases or DOUBLE_CASES}}


def block(code: str) -> str:
    return f"Here:\n```python\n{code}\n```\n"


async def run(rows: list[dict], replies: dict[str, str], **env_args) -> dict[str, dict]:
    """Each row's question answered with ``replies[question]``; the final states by question."""
    env = vf.CodeEnv(eval_dataset=Dataset.from_list(rows), **env_args)
    server = ScriptedServer(lambda request: Reply(replies[request.last_user_text.strip()]), port=0)
    with server.running() as url:
        client = AsyncOpenAI(base_url=url, api_key="x", max_retries=0)
        outputs = await env.evaluate(client, "m", num_examples=len(rows), rollouts_per_example=1)
    return {s["prompt"][-1]["content"]: s for s in outputs.state}


def test_code_extraction_and_report_parsing() -> None:
    assert extract_code("a\n```python\nx = 1\n```\nb\n```\ny = 2\n```") == "y = 2\n"
    assert extract_code("print(1)") == "print(1)"
    assert parse_report("total 3\npass\ntimeout\nfail\n") == {"passed": 1, "total": 3, "timed_out": True}
    assert parse_report("total 4\npass\npa") == {"passed": 1, "total": 4, "timed_out": False}  # cut short


async def test_function_asserts_right_wrong_and_syntax_error() -> None:
    replies = {
        "right": block("def add(a, b):\n    return a + b"),
        "wrong": block("def add(a, b):\n    return a * b"),  # right for (2, 2) and (0, 0) only
        "broken": block("def add(a, b)\n    return a + b"),
        "missing": block("def plus(a, b):\n    return a + b"),
    }
    states = await run([function_row(q) for q in replies], replies)
    assert states["right"]["reward"] == 1.0 and states["right"]["metrics"]["all_tests_passed"] == 1.0
    assert states["wrong"]["reward"] == 0.5 and states["wrong"]["metrics"]["all_tests_passed"] == 0.0
    assert states["broken"]["reward"] == 0.0 and states["broken"]["code_tests"]["total"] == 4
    assert states["missing"]["reward"] == 0.0
    assert all(s["error"] is None for s in states.values())


async def test_stdio_cases_compare_after_whitespace_normalisation() -> None:
    replies = {
        "right": block("n = int(input())\nprint(2 * n)"),
        "spaced": block("n = int(input())\nprint('  ', 2 * n, '  ')\nprint()\nprint()"),
        "wrong": block("n = int(input())\nprint(abs(2 * n))"),  # wrong for -3 only
        "crash": block("raise SystemExit(3)"),
        "broken": block("print(("),
        "split": block("n = int(input())\nprint(2 *\n n)"),
    }
    states = await run([stdio_row(q) for q in replies], replies)
    assert states["right"]["reward"] == 1.0 and states["spaced"]["reward"] == 1.0
    assert states["wrong"]["reward"] == 0.75
    assert states["crash"]["reward"] == 0.0 and states["broken"]["reward"] == 0.0
    assert states["broken"]["code_tests"] == {"passed": 0, "total": 4, "timed_out": False}
    assert states["split"]["reward"] == 1.0
    # Internal line structure counts: "1 2" on one line is not "1" and "2" on two.
    lines = [{"input": "", "output": "1\n2\n"}]
    states = await run([stdio_row("two lines", lines), stdio_row("one line", lines)],
                       {"two lines": block("print(1)\nprint(2)"), "one line": block("print(1, 2)")})
    assert states["two lines"]["reward"] == 1.0 and states["one line"]["reward"] == 0.0


async def test_a_case_that_loops_forever_times_out_and_the_rest_still_count() -> None:
    loops_on_five = block("n = int(input())\nwhile n == 5:\n    pass\nprint(2 * n)")
    loops_in_function = block("def add(a, b):\n    while a == 2:\n        pass\n    return a + b")
    started = time.perf_counter()
    states = await run([stdio_row("stdio"), function_row("function")],
                       {"stdio": loops_on_five, "function": loops_in_function}, timeout_per_test_seconds=1)
    assert time.perf_counter() - started < 30
    assert states["stdio"]["reward"] == 0.75 and states["stdio"]["code_tests"]["timed_out"]
    assert states["function"]["reward"] == 0.75 and states["function"]["code_tests"]["timed_out"]
    assert all(s["error"] is None and s["is_completed"] for s in states.values())


async def test_huge_output_is_capped_and_fails_the_case() -> None:
    flood = "import sys\nn = int(input())\nwhile n == 1:\n    sys.stdout.write('x' * 65536)\nprint(2 * n)"
    flood_function = "def add(a, b):\n    while a == 1:\n        print('y' * 65536)\n    return a + b"
    started = time.perf_counter()
    states = await run([stdio_row("stdio"), function_row("function")],
                       {"stdio": block(flood), "function": block(flood_function)},
                       timeout_per_test_seconds=20, max_output_bytes=100_000)
    assert time.perf_counter() - started < 20  # the cap ends the flood, not the time limit
    assert states["stdio"]["reward"] == 0.75 and not states["stdio"]["code_tests"]["timed_out"]
    assert states["function"]["reward"] == 0.75 and not states["function"]["code_tests"]["timed_out"]


async def test_a_failing_sandbox_is_an_error_not_a_zero() -> None:
    kill_agent = block("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef add(a, b):\n    return a + b")
    # In the stdin/stdout kind the program's parent is the harness; the agent is the harness's parent.
    kill_from_stdio = block("import os, signal\nharness = open(f'/proc/{os.getppid()}/stat').read().split()\n"
                            "os.kill(int(harness[3]), signal.SIGKILL)")
    states = await run([function_row("kill"), stdio_row("kill stdio")],
                       {"kill": kill_agent, "kill stdio": kill_from_stdio})
    for state in states.values():
        assert isinstance(state["error"], SandboxError)
        assert state["reward"] == 0.0 and state["metrics"] == {}  # not scored: the error counts once instead


@pytest.mark.parametrize("info", [
    {},
    {"test_cases": []},
    {"test_cases": [{"input": "1"}]},
    {"test_cases": "1 -> 2"},
    {"test_code": "assert True"},
    {"test_code": ADD_TESTS},
    {"test_code": ADD_TESTS, "entry_point": "not a name"},
])
def test_rows_without_usable_tests_are_refused_at_load(info: dict) -> None:
    rows = Dataset.from_list([{"question": "bad", "answer": "", "info": info or {"x": 1}}])
    with pytest.raises(UsageError, match="eval_dataset row 0: .*tests|entry_point|test_cases"):
        vf.CodeEnv(eval_dataset=rows)
    with pytest.raises(UsageError, match="^dataset row 0"):
        vf.CodeEnv(dataset=rows, eval_dataset=Dataset.from_list([stdio_row("fine")]))


@pytest.mark.parametrize("args", [{"timeout_per_test_seconds": 0}, {"timeout_per_test_seconds": "5"},
                                  {"max_output_bytes": -1}, {"max_output_bytes": 1.5}])
def test_bad_arguments_are_refused(args: dict) -> None:
    with pytest.raises(UsageError):
        vf.CodeEnv(eval_dataset=Dataset.from_list([stdio_row("fine")]), **args)
