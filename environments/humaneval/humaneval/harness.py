"""Runs one HumanEval problem's tests against a program, inside the sandbox (standard library only).

Usage: ``python3 harness.py program.py tests.py ENTRY_POINT``. The program is
executed, then every statement of ``check(candidate)`` that contains an
``assert`` is one test, run in order in one namespace with ``candidate`` bound
to the entry point. It prints ``total N`` first, then ``pass`` or ``fail`` per
test as it goes (flushed, so a run cut by its timeout still counts what passed).
"""

from __future__ import annotations

import ast
import sys


def test_units(test_source: str) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """Module-level statements of the test file, and the body of its ``check``."""
    tree = ast.parse(test_source)
    check = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check")
    return [n for n in tree.body if n is not check], check.body


def run(program: str, test_source: str, entry_point: str) -> None:
    preamble, body = test_units(test_source)
    units = [s for s in body if any(isinstance(n, ast.Assert) for n in ast.walk(s))]
    print("total", len(units), flush=True)
    namespace: dict = {"__name__": "__main__"}
    try:
        exec(compile(program, "program.py", "exec"), namespace)
        exec(compile(ast.Module(body=preamble, type_ignores=[]), "tests.py", "exec"), namespace)
        namespace["candidate"] = namespace[entry_point]
    except BaseException as error:  # noqa: BLE001 - a broken program fails every test
        print("error", type(error).__name__, str(error)[:200].replace("\n", " "), flush=True)
        return
    for statement in body:
        is_test = statement in units
        try:
            exec(compile(ast.Module(body=[statement], type_ignores=[]), "tests.py", "exec"), namespace)
        except BaseException:  # noqa: BLE001 - the candidate's failure is this test's failure
            if is_test:
                print("fail", flush=True)
            continue
        if is_test:
            print("pass", flush=True)


if __name__ == "__main__":
    with open(sys.argv[1]) as program, open(sys.argv[2]) as tests:
        run(program.read(), tests.read(), sys.argv[3])
