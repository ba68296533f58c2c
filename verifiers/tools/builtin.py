"""Ready-made tools the classic library shipped: ``python`` and ``calculator``.

``python`` runs the model's code the way a notebook cell does (the value of a
last bare expression is printed) in a fresh interpreter on *this* machine, as
the original did: a new process group, a scratch working folder, an empty
environment, a CPU-time and memory cap, and a wall-clock timeout. That bounds
accidents, not attacks: for model-written code you do not trust, use
:class:`verifiers.PythonEnv`, which runs it in a sandbox.

Both tools answer errors in words, because the model reads the answer.
"""

from __future__ import annotations

import ast
import os
import resource
import signal
import subprocess
import sys
import tempfile
import textwrap

PYTHON_TIMEOUT_S = 10
MAX_OUTPUT_CHARS = 1000
_MEMORY_LIMIT_BYTES = 2 * 1024**3
_CALCULATOR_CHARS = set("0123456789+-*/.() ")


def notebook_cell(source: str) -> str:
    """``source`` with its last bare expression printed when it is not None, as a notebook shows it."""
    tree = ast.parse(textwrap.dedent(source), mode="exec")
    last = tree.body[-1] if tree.body else None
    if not isinstance(last, ast.Expr):
        return textwrap.dedent(source)
    tree.body.pop()
    body = ast.unparse(ast.Module(body=tree.body, type_ignores=[]))
    return f"{body}\n_ = {ast.unparse(last.value)}\nif _ is not None: print(_)"


def _limit_resources() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_CPU, (PYTHON_TIMEOUT_S + 1, PYTHON_TIMEOUT_S + 1))
    resource.setrlimit(resource.RLIMIT_AS, (_MEMORY_LIMIT_BYTES, _MEMORY_LIMIT_BYTES))


def python(code: str) -> str:
    """Runs Python code as a notebook cell: what it prints, then the value of a last bare expression.

    Args:
        code (str): Python source; a final bare expression's value is shown unless it is None

    Returns:
        The printed output, or the error if the code failed

    Examples:
        {"code": "x = 5\\ny = 10\\nx + y"} -> "15"
        {"code": "a, b = 3, 4\\na, b"} -> "(3, 4)"
    """
    try:
        program = notebook_cell(code)
    except SyntaxError as error:
        return f"SyntaxError: {error.msg} (line {error.lineno})"
    with tempfile.TemporaryDirectory(prefix="vf-python-tool-") as scratch:
        process = subprocess.Popen(
            [sys.executable, "-I", "-c", program], cwd=scratch, env={"PATH": os.defpath, "HOME": scratch},
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True, preexec_fn=_limit_resources,
        )
        try:
            stdout, stderr = process.communicate(timeout=PYTHON_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # the code's own children go too
            process.communicate()
            return f"Error: Code execution timed out after {PYTHON_TIMEOUT_S} seconds"
    printed_error = stderr.strip()[:MAX_OUTPUT_CHARS]
    return printed_error or stdout.strip()[:MAX_OUTPUT_CHARS]


def calculator(expression: str) -> str:
    """Computes one arithmetic expression over numbers with + - * / ** and parentheses.

    Args:
        expression (str): The expression, e.g. "3 * (17 + 4)"; names, calls and imports are refused

    Returns:
        The value, or an error message

    Examples:
        "2 + 2" -> "4"
        "3 * (17 + 4)" -> "63"
    """
    if not set(expression) <= _CALCULATOR_CHARS:
        return "Error: Invalid characters in expression"
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as error:
        return f"Error: {error.msg}"
    try:
        return str(_evaluate(tree.body))
    except (ArithmeticError, ValueError) as error:
        return f"Error: {error}"


_OPERATORS = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a**b,
}


def _evaluate(node: ast.expr) -> int | float:
    """Numbers and + - * / ** only: no names, calls or attributes can reach here."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _evaluate(node.operand)
        return value if isinstance(node.op, ast.UAdd) else -value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 1000:
            raise ValueError("exponent too large")
        return _OPERATORS[type(node.op)](left, right)
    raise ValueError("only numbers and + - * / ** ( ) are allowed")


__all__ = ["calculator", "notebook_cell", "python"]
