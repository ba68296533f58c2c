"""The classic ready-made tools: ``verifiers.utils.tools.python`` and ``calculator``."""

from __future__ import annotations

import time

import pytest

from verifiers.tools import builtin
from verifiers.utils.tool_utils import convert_func_to_oai_tool
from verifiers.utils.tools import calculator, python


@pytest.mark.parametrize(("code", "answer"), [
    ("x = 5\ny = 10\nx + y", "15"),
    ("a, b = 3, 4\na, b", "(3, 4)"),
    ("print('hi')\nNone", "hi"),
    ("    indented = 2\n    indented * 3", "6"),
    ("import sys\nprint(sys.flags.isolated)", "1"),
])
def test_python_shows_output_like_a_notebook_cell(code: str, answer: str) -> None:
    assert python(code) == answer


def test_python_answers_errors_in_words() -> None:
    assert python("1/0").endswith("ZeroDivisionError: division by zero")
    assert python("def f(:").startswith("SyntaxError:")


def test_python_runs_in_a_scratch_folder_without_the_callers_environment(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    monkeypatch.chdir(tmp_path)
    assert python("import os\nos.environ.get('SECRET_TOKEN')") == ""
    assert python("import os\nos.getcwd()") != str(tmp_path)


def test_python_output_is_truncated() -> None:
    assert len(python("print('x' * 5000)")) == builtin.MAX_OUTPUT_CHARS


def test_python_timeout_kills_the_code_and_its_children(monkeypatch) -> None:
    monkeypatch.setattr(builtin, "PYTHON_TIMEOUT_S", 1)
    started = time.monotonic()
    answer = python("import subprocess, time\nsubprocess.Popen(['sleep', '60'])\ntime.sleep(60)")
    assert answer == "Error: Code execution timed out after 1 seconds"
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(("expression", "answer"), [
    ("2 + 2", "4"), ("3 * (17 + 4)", "63"), ("100 / 5", "20.0"), ("-2 ** 2", "-4"), ("2 ** 0.5", "1.4142135623730951"),
])
def test_calculator_computes(expression: str, answer: str) -> None:
    assert calculator(expression) == answer


@pytest.mark.parametrize(("expression", "error"), [
    ("__import__('os')", "Error: Invalid characters in expression"),
    ("1 / 0", "Error: division by zero"),
    ("((", "Error: '(' was never closed"),
    ("9 ** 9 ** 9", "Error: exponent too large"),
])
def test_calculator_refuses_bad_input_in_words(expression: str, error: str) -> None:
    assert calculator(expression) == error


def test_tools_have_schemas_the_model_can_read() -> None:
    tool = convert_func_to_oai_tool(python)
    assert tool["function"]["name"] == "python"
    assert tool["function"]["parameters"]["required"] == ["code"]
    assert "notebook" in tool["function"]["description"]
