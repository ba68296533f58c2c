"""The orchestrator's relayed admins against real nginx relays and real followers (``Fetcher.follow``).

The servers are stand-ins with vLLM's three weight routes (``GET /health``, ``GET /weights``,
``POST /update_weights``) that record the folder they are given: what the admins and the followers meet of a
server is those routes, and loading real weights into vLLM is ``test_vllm_broadcast.py``'s and the slow
end-to-end run's (``tests/trainer_adapter/test_rl_relays.py``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.trainer_adapter.broadcast.conftest import free_port, make_checkpoint, same_files
from trainer_adapter.broadcast.config import BroadcastConfig
from trainer_adapter.broadcast.errors import RelayError
from trainer_adapter.broadcast.fetcher import Fetcher
from trainer_adapter.broadcast.layout import LATEST
from trainer_adapter.broadcast.publisher import Publisher, PublishResult
from trainer_adapter.broadcast.relay import NginxRelay
from trainer_adapter.broadcast.relayed import (
    RelayBroadcast,
    RelayedAdmin,
    clear_relays,
    folder_version,
    loaded_version,
)
from trainer_adapter.inference.errors import InferenceServerError, WeightsFolderError
from trainer_adapter.inference.weights_client import WeightsClient
from verifiers.errors import UsageError

SIZES = {"model.safetensors": 200_000, "config.json": 100}


class StandInServer:
    """An inference server's weight routes over HTTP on 127.0.0.1; loading a folder is recording its path."""

    def __init__(self) -> None:
        self.weight_dir: str | None = None
        self.version = 0
        self.port = free_port()
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/health", self._health)
        app.router.add_get("/weights", self._weights)
        app.router.add_post("/update_weights", self._update)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({})

    async def _weights(self, request: web.Request) -> web.Response:
        return web.json_response({"version": self.version, "weight_dir": self.weight_dir, "base": "/base"})

    async def _update(self, request: web.Request) -> web.Response:
        folder = (await request.json())["weight_dir"]
        if not Path(folder, "model.safetensors").is_file():
            return web.json_response({"error": f"{folder} holds no weights"}, status=400)
        self.weight_dir, self.version = folder, self.version + 1
        return web.json_response({"version": self.version, "weight_dir": folder, "seconds": 0.0})

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


class CountingPublisher(Publisher):
    """The real publisher, counting the versions it was asked to publish."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[int] = []

    async def publish(self, folder: Path, step: int) -> PublishResult:
        self.calls.append(step)
        return await super().publish(folder, step)


def settings(relays: list[NginxRelay], tmp_path: Path) -> BroadcastConfig:
    return BroadcastConfig(relays=[r.url for r in relays], shard_bytes=65536, poll_interval_s=0.05,
                           fetch_dir=tmp_path / "fetched", load_timeout_s=30.0)  # fmt: skip


class Rig:
    """The run's one broadcast over the relays, and stand-in servers each with its relayed admin and, when asked,
    a real follower (``Fetcher.follow``, as ``trainer_adapter.broadcast.node`` runs it)."""

    def __init__(self, config: BroadcastConfig) -> None:
        self.config = config
        self.publisher = CountingPublisher(config.relays, keep=2, shard_size=config.shard_bytes)
        self.broadcast = RelayBroadcast(config, self.publisher)
        self.servers: list[StandInServer] = []
        self.admins: list[RelayedAdmin] = []
        self.followers: list[asyncio.Task[None]] = []
        self._closing: list[Any] = []

    async def server(self, follow: bool = True) -> tuple[StandInServer, RelayedAdmin]:
        server = StandInServer()
        await server.start()
        self.servers.append(server)
        self.admins.append(RelayedAdmin(self.broadcast, server.url))
        if follow:
            self.follow(server)
        return server, self.admins[-1]

    def follow(self, server: StandInServer) -> None:
        weights = WeightsClient(server.url, timeout=10)
        own = self.config.model_copy(update={"fetch_dir": self.fetch_dir(server)})
        fetcher = Fetcher.from_config(own, weights)
        self._closing += [weights, fetcher]
        self.followers.append(asyncio.create_task(fetcher.follow()))

    def fetch_dir(self, server: StandInServer) -> Path:
        return self.config.fetch_dir / f"server_{self.servers.index(server)}"

    async def stop_followers(self) -> None:
        for task in self.followers:
            task.cancel()
        await asyncio.gather(*self.followers, return_exceptions=True)
        for thing in self._closing:
            await thing.aclose()
        self._closing.clear()

    async def close(self) -> None:
        await self.stop_followers()
        for admin in self.admins:
            await admin.aclose()
        await self.broadcast.aclose()
        for server in self.servers:
            await server.stop()


@pytest.fixture
async def rig(relays: list[NginxRelay], tmp_path: Path) -> AsyncIterator[Rig]:
    built = Rig(settings(relays, tmp_path))
    yield built
    await built.close()


def weights_folder(root: Path, step: int) -> Path:
    return make_checkpoint(root / "weights" / f"step_{step}", step, SIZES)


async def test_each_version_is_published_once_however_many_servers_ask(relays, rig: Rig, tmp_path: Path) -> None:
    pairs = [await rig.server() for _ in range(3)]
    for step in (1, 2, 3):
        folder = weights_folder(tmp_path, step)
        answers = await asyncio.gather(*(admin.update(str(folder)) for _, admin in pairs))
        for (server, _), answer in zip(pairs, answers, strict=True):
            fetched = rig.fetch_dir(server) / f"step_{step}"
            assert server.weight_dir == answer["weight_dir"] == str(fetched)
            assert same_files(fetched, folder)
    assert rig.publisher.calls == rig.broadcast.published == [1, 2, 3]
    # A server asking again for a version already up (a rejoin) publishes nothing more.
    assert (await pairs[0][1].update(str(tmp_path / "weights" / "step_3")))["weight_dir"].endswith("step_3")
    assert rig.publisher.calls == [1, 2, 3]
    for relay in relays:
        assert json.loads((relay.data_dir / LATEST).read_text()) == {"step": 3}
        assert sorted(p.name for p in relay.data_dir.iterdir() if p.is_dir()) == ["2", "3"]  # keep_versions


async def test_the_update_waits_for_the_follower_and_times_out_without_one(rig: Rig, tmp_path: Path) -> None:
    server, admin = await rig.server(follow=False)
    update = asyncio.create_task(admin.update(str(weights_folder(tmp_path, 1))))
    await asyncio.sleep(0.5)
    assert not update.done() and rig.broadcast.published == [1]  # published, the server not there yet
    rig.follow(server)
    assert (await asyncio.wait_for(update, 30))["weight_dir"].endswith("step_1")
    await rig.stop_followers()
    impatient = RelayedAdmin(rig.broadcast, server.url, timeout_s=0.5)
    with pytest.raises(InferenceServerError, match=r"did not load step 2 .* holds .*step_1.*follower"):
        await impatient.update(str(weights_folder(tmp_path, 2)))
    await impatient.aclose()
    # A server that cannot be asked at all: WeightsClient's error, so the pool marks it down as before.
    gone = RelayedAdmin(rig.broadcast, f"http://127.0.0.1:{free_port()}/v1")
    with pytest.raises(InferenceServerError):
        await gone.update(str(tmp_path / "weights" / "step_2"))
    assert not await gone.healthy(1.0) and await admin.healthy(5.0)
    await gone.aclose()


async def test_a_relay_down_is_left_out_and_all_down_fails_until_one_is_back(relays, rig: Rig, tmp_path) -> None:
    _, admin = await rig.server()
    relays[0].kill()
    assert (await admin.update(str(weights_folder(tmp_path, 1))))["weight_dir"].endswith("step_1")
    relays[1].kill()
    relays[2].kill()
    with pytest.raises(RelayError, match="no relay took step 2"):
        await admin.update(str(weights_folder(tmp_path, 2)))
    relays[2].start()  # the failed publish was forgotten: the next ask publishes again
    assert (await admin.update(str(tmp_path / "weights" / "step_2")))["weight_dir"].endswith("step_2")
    assert rig.broadcast.published == [1, 2]


async def test_a_restarted_server_gets_its_version_again_from_its_follower(rig: Rig, tmp_path: Path) -> None:
    server, admin = await rig.server()
    await admin.update(str(weights_folder(tmp_path, 4)))
    server.weight_dir = None  # what a restarted vLLM reports: its launch weights
    # The pool's rejoin asks for the newest version: the follower, not the orchestrator, loads it again.
    answer = await asyncio.wait_for(admin.update(str(tmp_path / "weights" / "step_4")), 30)
    assert answer["weight_dir"] == str(rig.fetch_dir(server) / "step_4")
    assert rig.publisher.calls == [4]


async def test_a_follower_loads_version_zero_and_only_once(rig: Rig, tmp_path: Path) -> None:
    server, admin = await rig.server()
    answer = await admin.update(str(make_checkpoint(tmp_path / "run" / "base", 0, SIZES)))
    assert answer["weight_dir"] == str(rig.fetch_dir(server) / "step_0")
    await asyncio.sleep(0.5)  # many polls: version 0 is not loaded again, and the follower goes on
    assert server.version == 1 and not rig.followers[0].done()
    # A server holding a newer version than the one asked for holds what was asked.
    await admin.update(str(weights_folder(tmp_path, 1)))
    assert (await admin.update(str(tmp_path / "run" / "base")))["weight_dir"].endswith("step_1")


async def test_clearing_empties_the_relays_and_none_answering_is_a_clear_error(relays, tmp_path: Path) -> None:
    config = settings(relays, tmp_path)
    async with Publisher(config.relays, shard_size=config.shard_bytes) as publisher:
        for step in (5, 6):  # another run's versions
            await publisher.publish(weights_folder(tmp_path, step), step)
    relays[0].kill()
    assert await clear_relays(config) == config.relays[1:]
    for relay in relays[1:]:
        assert list(relay.data_dir.iterdir()) == []
    for relay in relays[1:]:
        relay.kill()
    start_them = r"no relay answers .*127\.0\.0\.1.*python -m trainer_adapter\.broadcast\.relay"
    with pytest.raises(RelayError, match=start_them):
        await asyncio.wait_for(clear_relays(config, timeout_s=2.0), 20)


def test_versions_come_from_folder_names_and_other_names_are_refused() -> None:
    assert folder_version("/run/weights/step_12") == 12
    assert folder_version(Path("/run/base")) == 0
    for bad in ("/run/weights/step_x", "/models/qwen", "/run/weights/step_"):
        with pytest.raises(WeightsFolderError, match="step_N or base") as caught:
            folder_version(bad)
        assert isinstance(caught.value, UsageError)  # the run's error, not a server's: the pool raises it
    assert loaded_version("/tmp/vf-weights/server_0/step_3") == 3
    assert loaded_version(None) is None and loaded_version("/run/base") is None
    with pytest.raises(ValueError, match="needs relays"):
        RelayBroadcast(BroadcastConfig())
