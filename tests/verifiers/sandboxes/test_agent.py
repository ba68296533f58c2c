"""The in-sandbox agent, run here as a plain host process (its sweep is off outside a fresh pid namespace)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from verifiers.sandboxes import agent as agent_module

AGENT = Path(agent_module.__file__)


def test_sweep_never_fires_outside_a_fresh_pid_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    killed: list[tuple[int, int]] = []
    monkeypatch.setattr(agent_module.os, "kill", lambda pid, sig: killed.append((pid, sig)))
    agent_module.Agent({"own_pid_namespace": True}).sweep()  # we are not pid 2 under pid 1
    agent_module.Agent({}).sweep()
    assert killed == []


def _converse(lines: list[str], config: dict, wait_s: float = 1.5) -> list[dict]:
    """Send ``lines`` to a host agent, keep stdin open ``wait_s``, and return its answers."""
    process = subprocess.Popen([sys.executable, "-I", "-S", str(AGENT), json.dumps(config)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("".join(line + "\n" for line in lines).encode())
    process.stdin.flush()
    time.sleep(wait_s)
    process.stdin.close()
    out = process.stdout.read().decode()
    process.wait(timeout=10)
    return [json.loads(line) for line in out.splitlines()]


def test_protocol_answers_each_request_including_bad_ones(tmp_path: Path) -> None:
    config = {"max_output": 16, "env": {"PATH": "/usr/bin:/bin", "BASE": "b"}, "cwd": str(tmp_path)}
    answers = _converse([
        json.dumps({"id": 1, "command": "echo $BASE $EXTRA; pwd", "timeout": 5, "env": {"EXTRA": "e"}}),
        json.dumps({"id": 2, "command": "sleep 30", "timeout": 0.3}),
        json.dumps({"id": 3, "command": "head -c 1000 /dev/zero", "timeout": 5}),
        json.dumps({"id": 4, "command": "true", "timeout": 5, "cwd": str(tmp_path / "missing")}),
        json.dumps({"id": 5, "timeout": 5}),
        json.dumps({"id": 6, "command": "x" * 200_000, "timeout": 5}),
        "not json",
        json.dumps({"command": "no id"}),
    ], config)
    by_id = {a.get("id"): a for a in answers}
    assert by_id[None] == {"ready": True, "pid": by_id[None]["pid"]}
    assert by_id[1]["stdout"] == f"b e\n{tmp_path}\n"[:16] and by_id[1]["truncated"]
    assert by_id[2]["timed_out"] and by_id[2]["exit_code"] == 137 and by_id[2]["duration_s"] < 2
    assert len(by_id[3]["stdout"]) == 16 and by_id[3]["truncated"]
    assert by_id[4]["kind"] == "not_found"
    assert by_id[5]["kind"] == "bad_request"
    assert by_id[6]["kind"] == "bad_request" and "Argument list too long" in by_id[6]["error"]
    assert len(answers) == 7  # lines without an id get no answer


def test_background_holders_of_the_pipes_do_not_stall_the_answer(tmp_path: Path) -> None:
    answers = _converse([json.dumps({"id": 1, "command": "sleep 5 & echo started", "timeout": 10})],
                        {"env": {"PATH": "/usr/bin:/bin"}, "cwd": str(tmp_path)}, wait_s=1.0)
    answer = next(a for a in answers if a.get("id") == 1)
    assert answer["stdout"] == "started\n" and answer["duration_s"] < 0.5


def test_commands_get_default_signals_relative_dirs_and_survive_bad_arguments(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    answers = _converse([
        json.dumps({"id": 1, "command": "yes | head -n 1; echo ${PIPESTATUS[0]}", "timeout": 5}),
        json.dumps({"id": 2, "command": "echo a\u0000b", "timeout": 5}),
        json.dumps({"id": 3, "command": "true", "timeout": 5, "env": {"A=B": "c"}}),
        json.dumps({"id": 4, "command": "pwd", "timeout": 5, "cwd": "sub"}),
        json.dumps({"id": 5, "command": "pwd", "timeout": 5}),
    ], {"env": {"PATH": "/usr/bin:/bin"}, "cwd": str(tmp_path)}, wait_s=1.0)
    by_id = {a.get("id"): a for a in answers}
    assert by_id[1]["stdout"] == "y\n141\n"  # `yes` died of SIGPIPE (128 + 13), not of a write error
    assert by_id[2]["kind"] == "bad_request" and by_id[3]["kind"] == "bad_request"
    assert by_id[4]["stdout"] == f"{tmp_path}/sub\n" and by_id[5]["stdout"] == f"{tmp_path}\n"
