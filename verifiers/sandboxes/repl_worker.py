"""A persistent Python session inside a sandbox (PythonEnv's), driven through two FIFOs.

Started in the background in the sandbox, it keeps one namespace for the
whole rollout. For each cell the host uploads ``cell-N.py``, then a command
writes ``N`` to the ``req`` FIFO and reads the answer (one JSON object) from
``resp``: the cell's printed output (stdout and stderr interleaved), the
``repr`` of a final expression, and whether it raised. A cell that calls
``exit()`` or raises anything leaves the session alive; one that outlives its
timeout is killed with the whole sandbox's background, and the next call
starts a fresh session. Standard library only: it runs under the sandbox's Python.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import sys
import traceback


def run_cell(source: str, namespace: dict) -> dict:
    """Execute ``source`` in ``namespace`` like an interactive prompt would."""
    buffer = io.StringIO()
    status, result = "ok", None
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        try:
            tree = ast.parse(source, "<cell>", "exec")
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, "<cell>", "exec"), namespace)
            if isinstance(last, ast.Expr):
                value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
                if value is not None:
                    result = repr(value)
        except BaseException:  # noqa: BLE001 - SystemExit and KeyboardInterrupt too: the session lives on
            status = "error"
            kind, error, trace = sys.exc_info()
            buffer.write("".join(traceback.format_exception(kind, error, trace.tb_next if trace else None)))
    return {"status": status, "output": buffer.getvalue(), "result": result}


def serve(directory: str) -> None:
    request, response = os.path.join(directory, "req"), os.path.join(directory, "resp")
    for fifo in (request, response):
        if not os.path.exists(fifo):
            os.mkfifo(fifo, 0o600)
    with open(os.path.join(directory, "pid"), "w") as handle:
        handle.write(str(os.getpid()))
    open(os.path.join(directory, "ready"), "w").close()
    namespace: dict = {"__name__": "__main__"}
    while True:
        with open(request) as handle:
            number = handle.read().strip()
        cell = os.path.join(directory, f"cell-{number}.py")
        try:
            with open(cell) as handle:
                source = handle.read()
            os.unlink(cell)
            answer = run_cell(source, namespace)
        except OSError as error:
            answer = {"status": "error", "output": f"cell {number} not found: {error}", "result": None}
        with open(response, "w") as handle:
            handle.write(json.dumps(answer))


if __name__ == "__main__":
    serve(sys.argv[1])
