"""Failover over several inference servers: scripted OpenAI servers on 127.0.0.1 are killed and restarted.

The servers are real HTTP servers; their health is asked through the production ``WeightsClient.healthy``.
They have no weight routes, so :class:`ScriptedAdmin` stands in for ``/update_weights``: it records the folder,
and fails as the real route would when its server does not answer.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from prometheus_client import CollectorRegistry
from pydantic import ValidationError

import verifiers as vf
from tests.trainer_adapter.orchestrator.test_orchestrator import _fake_trainer, _half_right
from trainer_adapter.inference.errors import InferenceServerError, WeightsFolderError
from trainer_adapter.inference.weights_client import WeightsClient
from trainer_adapter.orchestrator.metrics import OrchestratorMetrics
from trainer_adapter.orchestrator.orchestrator import Orchestrator, OrchestratorConfig
from trainer_adapter.orchestrator.servers import HealthConfig, ServerPool
from trainer_adapter.transport import step_dir
from verifiers.testing import ScriptedServer

FAST = HealthConfig(interval_s=0.05, max_backoff_s=0.4, all_down_timeout_s=30)


class ScriptedAdmin:
    """A server's admin side: the real health probe, and a recorded weight load that needs the server up."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.loaded: list[str] = []
        self.probes: list[tuple[float, float]] = []
        """When each health probe started and ended (monotonic seconds)."""

    async def healthy(self, timeout: float) -> bool:
        started = time.monotonic()
        try:
            return await self._answers(timeout)
        finally:
            self.probes.append((started, time.monotonic()))

    async def _answers(self, timeout: float) -> bool:
        async with WeightsClient(self.base_url) as client:  # one per call: nothing left open by a test
            return await client.healthy(timeout)

    async def update(self, weight_dir: str) -> dict:
        if not await self._answers(1.0):
            raise InferenceServerError(f"POST {self.base_url}/update_weights: connection refused")
        if not Path(weight_dir).is_dir():
            raise WeightsFolderError(f"{weight_dir} is not a folder")
        self.loaded.append(weight_dir)
        return {"version": len(self.loaded)}


def _restart(server: ScriptedServer, policy=None, **kwargs) -> ScriptedServer:
    """A new server on the port ``server`` had (the clients keep their URL, as with a restarted vLLM)."""
    port = urlsplit(server.base_url).port
    again = ScriptedServer(policy or _half_right(), port=port, **kwargs)
    again.start()
    return again


@pytest.fixture
def servers():
    started: list[ScriptedServer] = []

    def start(n: int, **kwargs) -> list[ScriptedServer]:
        for _ in range(n):
            server = ScriptedServer(_half_right(), port=0, **kwargs)
            server.start()
            started.append(server)
        return started[-n:]

    yield start
    for server in started:
        server.stop()


# -- the pool on its own ---------------------------------------------------------------------------------------


def test_round_robin_skips_down_servers_and_gives_none_when_all_are_down(servers) -> None:
    pool = ServerPool([ScriptedAdmin(s.base_url) for s in servers(3)], FAST)
    assert [pool.pick() for _ in range(4)] == [0, 1, 2, 0]
    pool.mark_down(1, "test")
    assert [pool.pick() for _ in range(4)] == [2, 0, 2, 0]
    assert pool.take_lost() == [1] and pool.take_lost() == []
    pool.mark_down(0, "test")
    pool.mark_down(2, "test")
    assert pool.pick() is None and pool.up() == []
    assert pool.counts["server_down"] == 3


async def test_the_health_probe_is_true_for_a_live_server_and_false_for_a_dead_one(servers) -> None:
    (server,) = servers(1)
    client = WeightsClient(server.base_url)
    assert await client.healthy(2.0)
    server.stop()
    assert not await client.healthy(2.0)
    await client.aclose()


async def test_a_weight_update_skips_a_dead_server_instead_of_failing(servers, tmp_path: Path) -> None:
    live, dead = servers(2)
    admins = [ScriptedAdmin(live.base_url), ScriptedAdmin(dead.base_url)]
    pool = ServerPool(admins, FAST)
    dead.stop()
    (tmp_path / "step_1").mkdir()
    await pool.update(str(tmp_path / "step_1"), 1)
    assert pool.version == 1 and pool.up() == [0] and pool.take_lost() == [1]
    assert admins[0].loaded == [str(tmp_path / "step_1")] and admins[1].loaded == []


async def test_without_a_health_config_a_failed_update_is_the_runs_error(servers, tmp_path: Path) -> None:
    (server,) = servers(1)
    pool = ServerPool([ScriptedAdmin(server.base_url)])
    server.stop()
    with pytest.raises(InferenceServerError, match="update_weights"):
        await pool.update(str(tmp_path), 1)


async def test_a_folder_the_model_cannot_take_is_the_runs_error_not_a_servers(servers, tmp_path: Path) -> None:
    pool = ServerPool([ScriptedAdmin(s.base_url) for s in servers(2)], FAST)
    with pytest.raises(WeightsFolderError):
        await pool.update(str(tmp_path / "missing"), 1)
    assert pool.up() == [0, 1]


async def test_a_down_server_is_polled_with_backoff_and_rejoins_on_the_current_weights(
    servers, tmp_path: Path
) -> None:
    first, second = servers(2)
    admins = [ScriptedAdmin(first.base_url), ScriptedAdmin(second.base_url)]
    pool = ServerPool(admins, FAST, weight_dir=str(tmp_path / "base"))
    (tmp_path / "base").mkdir()
    watcher = asyncio.create_task(pool.watch())
    try:
        second.stop()
        while pool.up() != [0]:  # found by the periodic probe, nothing else told it
            await asyncio.sleep(0.01)
        for version in (1, 2):  # versions it misses while down
            (tmp_path / f"step_{version}").mkdir()
            await pool.update(str(tmp_path / f"step_{version}"), version)
        polls = len(admins[1].probes)
        await asyncio.sleep(1.0)
        assert len(admins[1].probes) - polls <= 6  # backing off: not every 0.05 s (20 polls in 1 s)
        second = _restart(second)
        while pool.up() != [0, 1]:
            await asyncio.sleep(0.01)
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        second.stop()
    assert admins[1].loaded == [str(tmp_path / "step_2")]  # the current weights, loaded before it took rollouts
    assert admins[0].loaded == [str(tmp_path / "step_1"), str(tmp_path / "step_2")]
    assert pool.counts == {"server_down": 1, "server_rejoined": 1}


async def test_a_down_servers_polls_back_off_to_the_cap(servers) -> None:
    """The wait after each failed poll, read on a clock the test moves: interval_s, then doubling to the cap."""
    (dead,) = servers(1)
    dead.stop()
    admin = ScriptedAdmin(dead.base_url)
    now = [100.0]
    pool = ServerPool([admin], HealthConfig(interval_s=1.0, max_backoff_s=5.0), clock=lambda: now[0])
    watcher = asyncio.create_task(pool.watch())
    waits = []
    try:
        for _ in range(6):
            polls = len(admin.probes)
            now[0] = pool.servers[0].next_probe  # the poll is due
            while len(admin.probes) == polls:
                await asyncio.sleep(0.01)
            waits.append(pool.servers[0].next_probe - now[0])
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    assert waits == [1.0, 2.0, 4.0, 5.0, 5.0, 5.0]  # the first poll found it down (it was up): interval_s
    assert pool.up() == [] and pool.counts["server_down"] == 1


async def test_every_server_down_past_the_timeout_stops_the_run(servers) -> None:
    pool = ServerPool([ScriptedAdmin(s.base_url) for s in servers(2)],
                      HealthConfig(interval_s=0.05, max_backoff_s=0.05, all_down_timeout_s=0.2))
    pool.mark_down(0, "test")
    pool.mark_down(1, "test")
    pool.check()  # not yet
    await asyncio.sleep(0.3)
    with pytest.raises(InferenceServerError, match="all 2 inference servers have been down"):
        pool.check()


async def test_an_excluded_server_is_drained_never_probed_and_never_taken_back(servers) -> None:
    admins = [ScriptedAdmin(s.base_url) for s in servers(2)]
    pool = ServerPool(admins, FAST)
    watcher = asyncio.create_task(pool.watch())
    try:
        pool.exclude(1, "test")
        pool.exclude(1, "test")  # once is enough
        assert pool.up() == [0] and pool.take_lost() == [1] and pool.counts["server_excluded"] == 1
        probes = len(admins[1].probes)
        await asyncio.sleep(0.5)  # ten health intervals: it answers, yet stays out
        assert pool.up() == [0] and len(admins[1].probes) <= probes + 1  # at most the probe that was out
        assert [pool.pick() for _ in range(3)] == [0, 0, 0]
        pool.check()
        pool.exclude(0, "test")
        with pytest.raises(InferenceServerError, match="all 2 inference servers were excluded by the validator"):
            pool.check()
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)


def test_without_a_health_config_a_server_can_still_be_excluded(servers) -> None:
    pool = ServerPool([ScriptedAdmin(s.base_url) for s in servers(2)])
    pool.exclude(0, "test")
    assert pool.up() == [1] and pool.take_lost() == [0]


@pytest.mark.parametrize(("fields", "message"), [
    ({"interval_s": 0}, "interval_s"),
    ({"max_backoff_s": -1}, "max_backoff_s"),
    ({"interval_s": 10, "max_backoff_s": 5}, "max_backoff_s .* must be >= interval_s"),
    ({"all_down_timeout_s": 0}, "all_down_timeout_s"),
    ({"interval": 2}, "extra"),
])
def test_bad_health_settings_are_refused(fields: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        HealthConfig(**fields)


# -- the orchestrator over servers that die and come back ------------------------------------------------------


async def test_a_killed_server_is_drained_the_run_goes_on_and_it_rejoins_on_the_current_weights(
    servers, client_for, tmp_path: Path
) -> None:
    """Three servers, each answering after 50 ms so groups are in flight on all of them. Server 1 is killed
    once batch 1 is written (while groups are in flight on it) and restarted on its port once batch 3 is (of 8):
    every batch is still written, its groups in flight are counted as lost (and their problems asked again), it
    missed weight versions while down and loads the current one before it takes requests again."""
    scripted = servers(3, delay_s=0.05)
    admins = [ScriptedAdmin(s.base_url) for s in scripted]
    clients = [client_for(s.base_url) for s in scripted]
    env = vf.load_environment("reverse-text", num_train_examples=40, num_eval_examples=0)
    config = OrchestratorConfig(batch_size=8, rollouts_per_example=4, max_inflight_groups=6, max_tokens=32,
                                num_train_ranks=1, weights_poll_s=0.02, max_async_level=1)
    metrics = OrchestratorMetrics(CollectorRegistry())
    (tmp_path / "base").mkdir()
    health = HealthConfig(interval_s=0.05, max_backoff_s=0.1)  # back within a step of its restart
    orchestrator = Orchestrator(config, env, clients, admins, tmp_path, metrics=metrics, health=health,
                                weight_dir=str(tmp_path / "base"))
    steps = 8
    events: dict[str, int] = {}

    async def kill_and_restart() -> ScriptedServer:
        while not step_dir(tmp_path, 1).is_dir() or not any(i.client == 1 for i in orchestrator.inflight.values()):
            await asyncio.sleep(0.005)
        inflight_there = sum(info.client == 1 for info in orchestrator.inflight.values())
        scripted[1].stop()
        events.update(killed_at_version=orchestrator.version, inflight_there=inflight_there)
        while not step_dir(tmp_path, 3).is_dir():
            await asyncio.sleep(0.01)
        events["restarted_at_version"] = orchestrator.version
        return _restart(scripted[1], delay_s=0.05)

    trainer = asyncio.create_task(_fake_trainer(tmp_path, steps, seconds_per_step=0.2))
    chaos = asyncio.create_task(kill_and_restart())
    await asyncio.wait_for(orchestrator.run(steps), timeout=120)
    trainer.cancel()
    restarted = await chaos
    try:
        lines = [json.loads(x) for x in (tmp_path / "orchestrator_metrics.jsonl").read_text().splitlines()]
        assert [line["step"] for line in lines] == list(range(steps))
        assert all(line["rollouts"] == 8 for line in lines)
        last = lines[-1]
        assert last["server_down"] == 1 and last["server_rejoined"] == 1, last
        assert events["inflight_there"] >= 1
        assert last["lost_groups"] >= 1 and last["lost_rollouts"] == 4 * last["lost_groups"]
        assert last.get("failed_rollouts", 0) == 0  # drained before its rollouts failed on their own
        assert metrics.dropped.labels("lost")._value.get() == last["lost_rollouts"]
        assert min(line["servers_up"] for line in lines) == 2 and last["servers_up"] == 3
        # Down from one weights version to a later one, it missed the updates between and then loaded the
        # version the others held when it came back, before it was sent anything.
        versions = [int(Path(p).name.removeprefix("step_")) for p in admins[1].loaded]
        after_kill = [v for v in versions if v > events["killed_at_version"]]
        assert after_kill and after_kill[0] >= events["restarted_at_version"], (events, versions)
        assert versions == sorted(versions) and versions[-1] == orchestrator.version
        assert restarted.requests_served > 0  # it took rollouts again
        assert admins[0].loaded[-1] == admins[1].loaded[-1] == admins[2].loaded[-1]
    finally:
        restarted.stop()
