"""Warm pools and admission: sandboxes started ahead of demand, handed out once, never reused."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sandbox_hostcheck import mounts_under

from verifiers.sandboxes import (
    AsyncSandboxClient,
    CreateSandboxRequest,
    LocalBackend,
    LocalBackendConfig,
    SandboxStatus,
)


@pytest.fixture
async def pooled(sandbox_root: Path) -> AsyncIterator[tuple[AsyncSandboxClient, LocalBackend]]:
    backend = LocalBackend(LocalBackendConfig(root_dir=sandbox_root, warm_pool_size=2))
    yield AsyncSandboxClient(backend), backend
    await backend.close()
    assert [p for p in sandbox_root.iterdir() if p.name.isdigit()] == [] and mounts_under(sandbox_root) == []


async def _until_pool_ready(backend: LocalBackend, count: int) -> None:
    for _ in range(200):
        if backend.warm >= count:
            return
        await asyncio.sleep(0.05)
    pytest.fail("the pool did not fill")


async def test_a_warm_create_is_ready_at_once_and_never_reused(pooled) -> None:
    client, backend = pooled
    first = await client.create(CreateSandboxRequest(labels=["a"]))  # opens the pool for this shape
    await client.wait_for_creation(first.id)
    await client.execute_command(first.id, "echo secret > /workspace/left; sleep 600 >/dev/null 2>&1 &")
    await _until_pool_ready(backend, 2)
    started = time.perf_counter()
    warm = await client.create(CreateSandboxRequest(name="warm", labels=["b"]))
    await client.wait_for_creation(warm.id)
    assert time.perf_counter() - started < 0.05 and warm.status is SandboxStatus.RUNNING
    assert (warm.name, warm.labels) == ("warm", ["b"])
    assert [s.id for s in await client.list(labels=["b"])] == [warm.id]
    assert len(await client.list()) == 2  # pooled sandboxes are nobody's yet
    await client.delete(first.id)
    again = await client.create(CreateSandboxRequest())
    assert again.id not in (first.id, warm.id)
    leftovers = await client.execute_command(again.id, "ls /workspace; pgrep -c sleep; true")
    assert leftovers.stdout.split() == ["0"]


async def test_a_different_shape_is_not_served_from_another_shapes_pool(pooled) -> None:
    client, backend = pooled
    await client.create(CreateSandboxRequest())
    await _until_pool_ready(backend, 2)
    other = await client.create(CreateSandboxRequest(memory_gb=0.5))
    assert other.status is SandboxStatus.PENDING and other.memory_gb == 0.5


async def test_admission_queues_starts_beyond_the_limit(sandbox_root: Path) -> None:
    backend = LocalBackend(LocalBackendConfig(root_dir=sandbox_root, max_parallel_starts=1))
    client = AsyncSandboxClient(backend)
    try:
        boxes = [await client.create(CreateSandboxRequest()) for _ in range(4)]
        ready = await client.bulk_wait_for_creation([b.id for b in boxes])
        assert all(s.status is SandboxStatus.RUNNING for s in ready)
    finally:
        await backend.close()
