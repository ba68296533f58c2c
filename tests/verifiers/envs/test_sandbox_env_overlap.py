"""SandboxEnv starts the rollout's sandbox while the model writes its first turn, not before it.

A real local sandbox whose readiness a backend wrapper holds back to 2 s after its create call, and a
real scripted server that takes 2 s over the first turn: started together, the rollout takes about 2 s;
one after the other, 4 s.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from datasets import Dataset

from verifiers.envs.sandbox_env import SandboxEnv
from verifiers.sandboxes import (
    AsyncSandboxClient,
    CommandResponse,
    CreateSandboxRequest,
    LocalBackend,
    LocalBackendConfig,
    Sandbox,
    SandboxBackend,
    SandboxNotRunningError,
)
from verifiers.testing import Reply

_START_S = 2.0


class SlowStartingBackend(SandboxBackend):
    """A local backend whose sandboxes become ready ``start_s`` after their create call, as a slow image
    pull or a cold node would make them; a command before then is refused, so an early call shows."""

    def __init__(self, inner: LocalBackend, start_s: float) -> None:
        self.inner, self.start_s = inner, start_s
        self.ready_at: dict[str, float] = {}

    async def create(self, request: CreateSandboxRequest, idempotency_key: str | None = None) -> Sandbox:
        sandbox = await self.inner.create(request, idempotency_key)
        self.ready_at[sandbox.id] = time.monotonic() + self.start_s
        return sandbox

    async def wait_ready(self, sandbox_id: str, timeout: float) -> Sandbox:
        await asyncio.sleep(max(0.0, self.ready_at[sandbox_id] - time.monotonic()))
        return await self.inner.wait_ready(sandbox_id, timeout)

    async def get(self, sandbox_id: str) -> Sandbox:
        return await self.inner.get(sandbox_id)

    async def list(self, labels: list[str] | None = None) -> list[Sandbox]:
        return await self.inner.list(labels)

    async def execute(self, sandbox_id: str, command: str, *, timeout: float, working_dir: str | None = None,
                      env: dict[str, str] | None = None) -> CommandResponse:
        if time.monotonic() < self.ready_at[sandbox_id]:
            raise SandboxNotRunningError(f"sandbox {sandbox_id} is still starting")
        return await self.inner.execute(sandbox_id, command, timeout=timeout, working_dir=working_dir, env=env)

    async def write_file(self, sandbox_id: str, path: str, data: bytes) -> None:
        await self.inner.write_file(sandbox_id, path, data)

    async def read_file(self, sandbox_id: str, path: str, max_bytes: int) -> bytes:
        return await self.inner.read_file(sandbox_id, path, max_bytes)

    async def delete(self, sandbox_id: str) -> None:
        await self.inner.delete(sandbox_id)

    async def close(self) -> None:
        await self.inner.close()

    def close_sync(self) -> None:
        self.inner.close_sync()


@pytest.fixture
async def slow_sandboxes() -> AsyncIterator[AsyncSandboxClient]:
    if shutil.which("bwrap") is None:
        pytest.fail("bubblewrap is not installed: run `bash scripts/setup_sandbox.sh` first")
    root = Path("/var/tmp") / f"vf-sbx-overlap-tests-{os.getpid()}"
    backend = LocalBackend(LocalBackendConfig(root_dir=root))
    await backend.start()  # the probe runs once per backend: keep it out of the timed rollout
    yield AsyncSandboxClient(SlowStartingBackend(backend, _START_S))
    assert await backend.list() == [], "a rollout left its sandbox behind"
    await backend.close()
    shutil.rmtree(root, ignore_errors=True)


def _slow_first_turn(model_s: float):
    """Thinks ``model_s`` over its first turn and calls bash; then answers with the tool's output at once."""

    def policy(request):
        if request.assistant_turns == 0:
            call = {"id": "c0", "type": "function", "function": {"name": "bash", "arguments": json.dumps(
                {"command": "echo ready"})}}
            return Reply(tool_calls=[call], delay_s=model_s)
        return Reply(content=next(m["content"] for m in request.messages if m["role"] == "tool"))

    return policy


async def _timed_rollout(serve, client_for, sandboxes: AsyncSandboxClient, model_s: float) -> tuple[float, dict]:
    model = client_for(serve(_slow_first_turn(model_s)))
    env = SandboxEnv(dataset=Dataset.from_list([{"question": "q", "answer": ""}]), sandbox_client=sandboxes,
                     max_turns=4)
    started = time.perf_counter()
    state = await env.rollout(env.get_dataset()[0], model, "m")
    elapsed = time.perf_counter() - started
    assert state["error"] is None and state["completion"][-1]["content"] == "ready"
    return elapsed, env.monitor_metrics(state)


async def test_sandbox_start_overlaps_the_first_model_turn(serve, client_for, slow_sandboxes) -> None:
    model_s = 2.0
    elapsed, metrics = await _timed_rollout(serve, client_for, slow_sandboxes, model_s)
    longer, total = max(model_s, _START_S), model_s + _START_S
    assert longer <= elapsed < 0.75 * total, f"rollout took {elapsed:.2f} s: start-up and model turn in series"
    # the model's turn hid nearly all of the start-up: what the first bash call still waited is small
    assert metrics["sandbox_ready_wait_time"] < 0.5 * _START_S


async def test_the_ready_wait_is_what_the_model_turn_did_not_hide(serve, client_for, slow_sandboxes) -> None:
    model_s = 0.5
    elapsed, metrics = await _timed_rollout(serve, client_for, slow_sandboxes, model_s)
    assert _START_S <= elapsed < _START_S + model_s
    # ready 2 s after create; the first bash call came after the 0.5 s turn (and its HTTP round trip)
    assert 0.5 * (_START_S - model_s) < metrics["sandbox_ready_wait_time"] <= _START_S - model_s
