"""The sandboxes' Prometheus metrics, recorded by real sandboxes and read back from the process's registry.

The registry is the process's own (other tests' sandboxes count in it too), so each test reads how much a
value moved while it ran, never an absolute count except for the gauges of its own backend.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from verifiers.sandboxes import AsyncSandboxClient, CreateSandboxRequest, LocalBackend, LocalBackendConfig
from verifiers.sandboxes.metrics import SandboxMetrics, sandbox_metrics


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_exec_latency_is_observed_by_outcome(client: AsyncSandboxClient, make_sandbox) -> None:
    box = await make_sandbox(memory_gb=0.125)
    before = {outcome: _value("vf_sandbox_exec_seconds_count", outcome=outcome)
              for outcome in ("ok", "timed_out", "oom_killed", "error")}
    slow_before = _value("vf_sandbox_exec_seconds_sum", outcome="ok")
    oom_before = _value("vf_sandbox_oom_kills_total", scope="command")
    await client.execute_command(box, "sleep 0.3")
    await client.execute_command(box, "exit 3")  # a failing command ran: its outcome is still ok
    await client.execute_command(box, "sleep 5", timeout=0.2, raise_on_timeout=False)
    killed = await client.execute_command(box, "python3 -c 'b = bytearray(1 << 30)'", timeout=20)
    with pytest.raises(Exception, match="over max_command_bytes"):
        await client.execute_command(box, "x" * 200_000)
    moved = {outcome: _value("vf_sandbox_exec_seconds_count", outcome=outcome) - before[outcome] for outcome in before}
    assert killed.oom_killed
    assert moved == {"ok": 2, "timed_out": 1, "oom_killed": 1, "error": 1}
    assert _value("vf_sandbox_exec_seconds_sum", outcome="ok") - slow_before >= 0.3
    assert _value("vf_sandbox_oom_kills_total", scope="command") - oom_before == 1


async def test_live_and_pool_gauges_follow_the_backends(sandbox_root: Path) -> None:
    base_live = _value("vf_sandbox_live")
    pool = LocalBackend(LocalBackendConfig(root_dir=sandbox_root, warm_pool_size=2))
    client = AsyncSandboxClient(pool)
    created_before = _value("vf_sandbox_create_seconds_count")
    try:
        first = await client.create(CreateSandboxRequest())  # opens the pool: this one starts cold
        await client.wait_for_creation(first.id)
        second = await client.create(CreateSandboxRequest())
        await client.wait_for_creation(second.id)
        assert _value("vf_sandbox_live") - base_live == 2
        for sandbox_id in (first.id, second.id):
            await client.execute_command(sandbox_id, "true")
        pooled = _value("vf_sandbox_pool", state="ready") + _value("vf_sandbox_pool", state="starting")
        assert pooled >= 2  # refilled behind each hand-out
        assert _value("vf_sandbox_create_seconds_count") - created_before == 2
        await client.delete(first.id)
        assert _value("vf_sandbox_live") - base_live == 1
    finally:
        await pool.close()
    assert _value("vf_sandbox_live") == base_live


def test_without_prometheus_client_nothing_is_recorded_and_nothing_fails() -> None:
    silent = SandboxMetrics(None)
    silent.observe_exec(1.0, "ok")
    silent.observe_create(0.1)
    silent.count_oom_kill("sandbox")
    assert not silent.enabled
    assert sandbox_metrics() is sandbox_metrics() and sandbox_metrics().enabled  # one set of instruments a process


def test_a_second_set_of_instruments_on_one_registry_is_refused() -> None:
    sandbox_metrics()
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        SandboxMetrics(REGISTRY)
