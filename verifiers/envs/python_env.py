"""``PythonEnv``: a persistent Python session as the model's tool, in a sandbox per rollout.

Variables, imports and functions carry over between the model's ``python``
calls, as in a notebook; the value of a final expression is shown as
``Out[n]: ...``. The session runs inside the rollout's sandbox (see
:mod:`verifiers.sandboxes.repl_worker`), so the model's code is as isolated as
its bash commands would be. A cell that runs past the per-command timeout is
killed and the session restarts empty, which the model is told.

Example::

    env = vf.PythonEnv(dataset=ds, rubric=rubric, timeout_per_command_seconds=20, max_turns=6)
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from typing_extensions import TypedDict  # pydantic builds tool schemas from it on Python < 3.12

from verifiers.envs.sandbox_env import SandboxEnv, SandboxState
from verifiers.errors import SandboxError
from verifiers.sandboxes import CommandTimeoutError
from verifiers.state import State

_DIR = "/tmp/.vf_python"
_WORKER_SOURCE = (Path(__file__).resolve().parent.parent / "sandboxes" / "repl_worker.py").read_bytes()
# Start the session unless it runs, then hand it cell N and print its answer (first line: started/running).
_ASK = (
    "d={d}; pid=$(cat $d/pid 2>/dev/null); "
    "if [ -n \"$pid\" ] && grep -q repl_worker /proc/$pid/cmdline 2>/dev/null; then echo running; else "
    "rm -f $d/req $d/resp $d/ready; setsid python3 -u $d/repl_worker.py $d </dev/null >$d/worker.log 2>&1 & "
    "i=0; while [ ! -e $d/ready ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; echo started; fi; "
    "echo {n} > $d/req && cat $d/resp"
)
_RESTARTED = "[the Python session was restarted: variables from earlier calls are gone]"


class PythonState(TypedDict):
    """Per-rollout session bookkeeping, in ``state["python_state"]``."""

    ready: bool
    execution_count: int
    ready_wait_time: float
    sessions: int


class PythonEnv(SandboxEnv):
    """A sandbox environment whose one tool is ``python``, a persistent interpreter session.

    Takes SandboxEnv's arguments; the sandbox's Python is the host's ``/usr/bin/python3``
    with the packages installed there (no network to install more, unless ``network_access``).
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("sandbox_name", "python-env")
        super().__init__(**kwargs)
        self.remove_tool(self.bash)
        self.add_tool(self.python, args_to_skip=["sandbox_id", "sandbox_state", "python_state"])

    async def setup_state(self, state: State, **kwargs: Any) -> State:
        state = await super().setup_state(state, **kwargs)
        state["python_state"] = PythonState(ready=False, execution_count=0, ready_wait_time=0.0, sessions=0)
        return state

    def update_tool_args(self, tool_name: str, tool_args: dict[str, Any], messages: Any, state: State,
                         **kwargs: Any) -> dict[str, Any]:
        if tool_name != "python":
            return super().update_tool_args(tool_name, tool_args, messages, state, **kwargs)
        return {**tool_args, "sandbox_id": state["sandbox_id"], "sandbox_state": state["sandbox_state"],
                "python_state": state["python_state"]}

    async def python(self, code: str, sandbox_id: str, sandbox_state: SandboxState, python_state: PythonState) -> str:
        """Run Python code in a persistent session: variables, imports and functions stay defined for later
        calls, and the value of a final expression is shown.

        Args:
            code: the Python source to run.
        """
        if not python_state["ready"]:
            started = time.perf_counter()
            await self.wait_for_sandbox(sandbox_id, sandbox_state)
            await self.sandbox_client.upload_bytes(sandbox_id, f"{_DIR}/repl_worker.py", _WORKER_SOURCE)
            python_state["ready"] = True
            python_state["ready_wait_time"] = time.perf_counter() - started
        number = python_state["execution_count"] = python_state["execution_count"] + 1
        await self.sandbox_client.upload_bytes(sandbox_id, f"{_DIR}/cell-{number}.py", code.encode())
        try:
            result = await self.run_command(sandbox_id, sandbox_state, _ASK.format(d=_DIR, n=number))
        except CommandTimeoutError:
            python_state["sessions"] = 0  # the next session starts silently: this answer says it all
            return (f"Error: the code ran past {self.timeout_per_command_seconds}s and was stopped. "
                    + _RESTARTED)
        status, _, payload = result.stdout.partition("\n")
        try:
            answer = json.loads(payload)
        except ValueError:
            raise SandboxError(f"the Python session did not answer ({status!r}): {result.stderr[-300:]}") from None
        restarted = False
        if status == "started":
            python_state["sessions"] += 1
            restarted = python_state["sessions"] > 1
        return self.format_answer(answer, number, restarted)

    @staticmethod
    def format_answer(answer: dict[str, Any], number: int, restarted: bool) -> str:
        """The model's view of one cell: its output, then ``Out[n]: value``, or ``(no output)``."""
        parts = [_RESTARTED] if restarted else []
        if (answer.get("output") or "").rstrip():
            parts.append(answer["output"].rstrip())
        if answer.get("status") == "ok" and answer.get("result") is not None:
            parts.append(f"Out[{number}]: {answer['result']}")
        return "\n".join(parts) or "(no output)"

    def monitor_metrics(self, state: State) -> dict[str, float]:
        """Adds ``python_ready_wait_time``: seconds from the first call to a running session."""
        python_state = state.get("python_state") or {}
        wait = float(python_state.get("ready_wait_time", 0.0))
        return {**super().monitor_metrics(state), "python_ready_wait_time": wait}


__all__ = ["PythonEnv", "PythonState"]
