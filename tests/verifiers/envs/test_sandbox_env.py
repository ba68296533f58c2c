"""SandboxEnv end to end: a real scripted server calls ``bash``, real local sandboxes answer."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from datasets import Dataset

from verifiers.envs.sandbox_env import SandboxEnv
from verifiers.sandboxes import (
    AsyncSandboxClient,
    LocalBackend,
    LocalBackendConfig,
    SandboxNotRunningError,
    SandboxUnavailableError,
)
from verifiers.testing import Reply


@pytest.fixture(scope="module")
def env_sandbox_root() -> Iterator[Path]:
    if shutil.which("bwrap") is None:
        pytest.fail("bubblewrap is not installed: run `bash scripts/setup_sandbox.sh` first")
    root = Path("/var/tmp") / f"vf-sbx-env-tests-{os.getpid()}"
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
async def sandboxes(env_sandbox_root: Path) -> AsyncIterator[AsyncSandboxClient]:
    backend = LocalBackend(LocalBackendConfig(root_dir=env_sandbox_root))
    yield AsyncSandboxClient(backend)
    assert await backend.list() == [], "a rollout left its sandbox behind"
    await backend.close()


def bash_script(*commands: str) -> Any:
    """A policy that runs ``commands`` with bash, one per turn, then answers with every tool output."""

    def policy(request):
        turn = request.assistant_turns
        if turn < len(commands):
            arguments = json.dumps({"command": commands[turn]})
            return Reply(tool_calls=[{"id": f"c{turn}", "type": "function",
                                      "function": {"name": "bash", "arguments": arguments}}])
        return Reply(content=" | ".join(m["content"] for m in request.messages if m["role"] == "tool"))

    return policy


def _ds(n: int = 1) -> Dataset:
    return Dataset.from_list([{"question": f"task {i}", "answer": ""} for i in range(n)])


async def test_bash_runs_in_a_sandbox_that_persists_across_turns_and_is_deleted_after(
        serve, client_for, sandboxes: AsyncSandboxClient) -> None:
    model = client_for(serve(bash_script("echo hi > note; id -un", "cat note; echo oops >&2", "true",
                                         "cat /etc/shadow")))
    env = SandboxEnv(dataset=_ds(), sandbox_client=sandboxes, max_turns=10)
    params = env.oai_tools[0]["function"]["parameters"]
    assert list(params["properties"]) == ["command"] and params["required"] == ["command"]
    state = await env.rollout(env.get_dataset()[0], model, "m")
    tools = [m["content"] for m in state["completion"] if m["role"] == "tool"]
    assert tools[:3] == ["sandbox", "hi\nstderr:\noops", "(no output)"]
    assert "No such file" in tools[3]
    assert state["error"] is None and state["stop_condition"] == "no_tools_called"
    metrics = env.monitor_metrics(state)
    # the ready wait is measured against a known start-up in test_sandbox_env_overlap.py
    assert metrics["sandbox_command_execution_time"] > 0
    assert metrics["bash_calls"] == 4
    assert (await sandboxes.get(state["sandbox_id"])).status.value == "TERMINATED"
    assert env.active_sandboxes == set()


async def test_a_timed_out_command_is_answered_and_the_rollout_goes_on(serve, client_for, sandboxes) -> None:
    model = client_for(serve(bash_script("sleep 30", "echo after")))
    env = SandboxEnv(dataset=_ds(), sandbox_client=sandboxes, timeout_per_command_seconds=1)
    state = await env.rollout(env.get_dataset()[0], model, "m")
    tools = [m["content"] for m in state["completion"] if m["role"] == "tool"]
    assert tools == ["Error: Command timed out after 1s", "after"]


async def test_a_sandbox_that_dies_ends_the_rollout_with_an_infra_error(serve, client_for, sandboxes) -> None:
    model = client_for(serve(bash_script("kill -9 $PPID", "echo never")))
    env = SandboxEnv(dataset=_ds(), sandbox_client=sandboxes)
    state = await env.rollout(env.get_dataset()[0], model, "m")
    assert isinstance(state["error"], SandboxNotRunningError) and state["stop_condition"] == "has_error"
    assert not [m for m in state["completion"] if m["role"] == "tool"]
    assert env.active_sandboxes == set()


async def test_a_backend_that_cannot_isolate_fails_the_rollout_not_the_run(serve, client_for,
                                                                           env_sandbox_root: Path) -> None:
    broken = AsyncSandboxClient(LocalBackend(LocalBackendConfig(root_dir=env_sandbox_root, python="/nope/python3")))
    env = SandboxEnv(dataset=_ds(), sandbox_client=broken)
    state = await env.rollout(env.get_dataset()[0], client_for(serve(bash_script("true"))), "m")
    assert isinstance(state["error"], SandboxUnavailableError) and state["completion"] == []


async def test_many_rollouts_at_once_each_get_their_own_sandbox(serve, client_for, sandboxes) -> None:
    model = client_for(serve(bash_script("echo $RANDOM$RANDOM > /tmp/me; ls /tmp | wc -l")))
    env = SandboxEnv(dataset=_ds(3), sandbox_client=sandboxes)
    outputs = await env.evaluate(model, "m", num_examples=3, rollouts_per_example=2)
    states = outputs.state
    assert len(states) == 6 and all(s["error"] is None for s in states)
    assert len({s["sandbox_id"] for s in states}) == 6
    assert all(next(m for m in s["completion"] if m["role"] == "tool")["content"] == "1" for s in states)


async def test_teardown_deletes_what_rollouts_left(sandboxes: AsyncSandboxClient) -> None:
    env = SandboxEnv(dataset=_ds(), sandbox_client=sandboxes)
    state: dict[str, Any] = {}
    await env.setup_state(state)
    assert len(await sandboxes.list()) == 1
    await env.teardown()
    assert await sandboxes.list() == [] and env.active_sandboxes == set()


def test_bad_sandbox_settings_are_refused_when_the_environment_is_built() -> None:
    with pytest.raises(ValueError):
        SandboxEnv(dataset=_ds(), memory_gb=0)


async def test_an_episode_without_tool_calls_cancels_its_sandbox_cleanly(serve, client_for, sandboxes) -> None:
    model = client_for(serve(lambda request: Reply(content="no tools needed")))
    env = SandboxEnv(dataset=_ds(), sandbox_client=sandboxes)
    state = await env.rollout(env.get_dataset()[0], model, "m")
    assert state["error"] is None and state["sandbox_state"]["ready"] is False
    assert env.monitor_metrics(state)["sandbox_ready_wait_time"] == 0.0
    assert (await sandboxes.get(state["sandbox_id"])).status.value == "TERMINATED"
