"""Runs a program's test cases inside a sandbox; uploaded there by ``CodeEnv`` (standard library only).

Usage::

    python3 code_harness.py function PROGRAM TESTS ENTRY_POINT SECONDS MAX_OUTPUT_BYTES
    python3 code_harness.py stdio PROGRAM CASES_JSON SECONDS MAX_OUTPUT_BYTES

``function``: the program is executed, then every statement of the test file's
``check(candidate)`` that contains an ``assert`` is one case, run in order in
one namespace with ``candidate`` bound to the entry point. ``stdio``: each case
(``{"input", "output"}`` in the JSON list) runs the program as a fresh process
fed the input; its output must equal the expected one after whitespace
normalisation. Each case has ``SECONDS`` to finish, and what the program writes
is capped at ``MAX_OUTPUT_BYTES`` (a file-size limit, so a flood fails the case
instead of filling memory or the report). The report goes to stdout: ``total N``
first, then ``pass``, ``fail`` or ``timeout`` per case, flushed as it goes so a
run cut short still counts what it reported.
"""

from __future__ import annotations

import ast
import json
import os
import resource
import signal
import subprocess
import sys
from typing import Any


class CaseTimeout(BaseException):
    """Raised by the alarm in a case that overran (a BaseException, so ``except Exception`` cannot hide it)."""


def report(fd: int, line: str) -> None:
    os.write(fd, (line + "\n").encode())


def limit_output(max_bytes: int) -> None:
    """Cap files this process writes; a write past the cap fails (EFBIG) instead of killing the process."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))


def _alarm(signum: int, frame: Any) -> None:
    raise CaseTimeout


def run_function(program: str, test_source: str, entry_point: str, seconds: float, max_bytes: int) -> None:
    tree = ast.parse(test_source)
    check = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check")
    preamble = [n for n in tree.body if n is not check]
    cases = [s for s in check.body if any(isinstance(n, ast.Assert) for n in ast.walk(s))]
    # The report keeps the real stdout; the program's own prints go to a capped file.
    out = os.dup(1)
    sink = os.open("program_output.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(sink, 1)
    os.dup2(sink, 2)
    limit_output(max_bytes)
    signal.signal(signal.SIGALRM, _alarm)
    report(out, f"total {len(cases)}")
    namespace: dict[str, Any] = {"__name__": "__main__"}
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        exec(compile(program, "program.py", "exec"), namespace)
        exec(compile(ast.Module(body=preamble, type_ignores=[]), "tests.py", "exec"), namespace)
        namespace["candidate"] = namespace[entry_point]
        signal.setitimer(signal.ITIMER_REAL, 0)
    except BaseException as error:  # noqa: BLE001 - a program that does not load fails every case
        signal.setitimer(signal.ITIMER_REAL, 0)
        report(out, f"error {type(error).__name__}")
        return
    for statement in check.body:
        outcome = "pass"
        try:
            signal.setitimer(signal.ITIMER_REAL, seconds)
            exec(compile(ast.Module(body=[statement], type_ignores=[]), "tests.py", "exec"), namespace)
        except CaseTimeout:
            outcome = "timeout"
        except BaseException:  # noqa: BLE001 - the candidate's failure is this case's failure
            outcome = "fail"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if statement in cases:
            report(out, outcome)


def normalise(text: str) -> list[str]:
    """Lines with runs of whitespace collapsed, blank lines at either end dropped."""
    return [" ".join(line.split()) for line in text.strip().splitlines()]


def run_case(program: str, given: str, expected: str, seconds: float, max_bytes: int) -> str:
    with open("input.txt", "w") as stdin:
        stdin.write(given)
    with open("input.txt") as stdin, open("output.txt", "wb") as stdout:
        process = subprocess.Popen([sys.executable, program], stdin=stdin, stdout=stdout,
                                   stderr=subprocess.DEVNULL, start_new_session=True,
                                   preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE,
                                                                         (max_bytes, max_bytes)))
        try:
            code = process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # the whole group: a forked child must not linger
            process.wait()
            return "timeout"
    with open("output.txt", "rb") as produced:
        output = produced.read(max_bytes + 1)
    if code != 0 or len(output) >= max_bytes:
        return "fail"  # a crash, or output cut at the cap (SIGXFSZ)
    return "pass" if normalise(output.decode("utf-8", "replace")) == normalise(expected) else "fail"


def run_stdio(program: str, cases_path: str, seconds: float, max_bytes: int) -> None:
    with open(cases_path) as handle:
        cases = json.load(handle)
    out = sys.stdout.fileno()
    report(out, f"total {len(cases)}")
    for case in cases:
        report(out, run_case(program, case["input"], case["output"], seconds, max_bytes))


def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "function":
        program_path, tests_path, entry_point, seconds, max_bytes = argv[1:]
        with open(program_path) as program, open(tests_path) as tests:
            run_function(program.read(), tests.read(), entry_point, float(seconds), int(max_bytes))
    elif mode == "stdio":
        program_path, cases_path, seconds, max_bytes = argv[1:]
        run_stdio(program_path, cases_path, float(seconds), int(max_bytes))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
