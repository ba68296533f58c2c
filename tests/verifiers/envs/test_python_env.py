"""PythonEnv: one Python session per rollout that remembers across turns, in a real sandbox."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from datasets import Dataset

from verifiers.envs.python_env import PythonEnv
from verifiers.sandboxes import AsyncSandboxClient, LocalBackend, LocalBackendConfig
from verifiers.testing import Reply


@pytest.fixture(scope="module")
def py_sandbox_root() -> Iterator[Path]:
    if shutil.which("bwrap") is None:
        pytest.fail("bubblewrap is not installed: run `bash scripts/setup_sandbox.sh` first")
    root = Path("/var/tmp") / f"vf-sbx-py-tests-{os.getpid()}"
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
async def sandboxes(py_sandbox_root: Path) -> AsyncIterator[AsyncSandboxClient]:
    backend = LocalBackend(LocalBackendConfig(root_dir=py_sandbox_root))
    yield AsyncSandboxClient(backend)
    assert await backend.list() == []
    await backend.close()


def python_script(*cells: str) -> Any:
    """A policy that runs one cell per turn, then answers with every tool output joined by ' || '."""

    def policy(request):
        turn = request.assistant_turns
        if turn < len(cells):
            return Reply(tool_calls=[{"id": f"c{turn}", "type": "function",
                                      "function": {"name": "python", "arguments": json.dumps({"code": cells[turn]})}}])
        return Reply(content=" || ".join(m["content"] for m in request.messages if m["role"] == "tool"))

    return policy


def _ds() -> Dataset:
    return Dataset.from_list([{"question": "compute", "answer": ""}])


def _tool_outputs(state: dict) -> list[str]:
    return [m["content"] for m in state["completion"] if m["role"] == "tool"]


async def test_the_session_remembers_across_turns(serve, client_for, sandboxes: AsyncSandboxClient) -> None:
    model = client_for(serve(python_script(
        "import math\nx = 21\nprint('set')",
        "def double(v):\n    return v * 2\ndouble(x)",
        "math.sqrt(16)",
        "undefined_name",
        "import sys; sys.exit(3)",
        "x",
        "print('a'); import os; os.getuid()",
    )))
    env = PythonEnv(dataset=_ds(), sandbox_client=sandboxes, max_turns=10)
    assert [t["function"]["name"] for t in env.oai_tools] == ["python"]
    assert list(env.oai_tools[0]["function"]["parameters"]["properties"]) == ["code"]
    state = await env.rollout(env.get_dataset()[0], model, "m")
    out = _tool_outputs(state)
    assert out[0] == "set" and out[1] == "Out[2]: 42" and out[2] == "Out[3]: 4.0"
    assert "NameError: name 'undefined_name' is not defined" in out[3] and "Out[" not in out[3]
    assert "SystemExit: 3" in out[4]
    assert out[5] == "Out[6]: 21"  # the session survived the error and the exit
    assert out[6] == "a\nOut[7]: 1000"  # the sandbox's own user
    assert state["error"] is None
    assert env.monitor_metrics(state)["python_ready_wait_time"] > 0


async def test_a_runaway_cell_is_stopped_and_the_session_restarts_empty(serve, client_for, sandboxes) -> None:
    model = client_for(serve(python_script("y = 5", "while True:\n    pass", "y", "z = 1\nz")))
    env = PythonEnv(dataset=_ds(), sandbox_client=sandboxes, timeout_per_command_seconds=1.5)
    state = await env.rollout(env.get_dataset()[0], model, "m")
    out = _tool_outputs(state)
    assert out[0] == "(no output)"
    assert out[1].startswith("Error: the code ran past 1.5s") and "restarted" in out[1]
    assert "NameError" in out[2] and "restarted" not in out[2]
    assert out[3] == "Out[4]: 1"
