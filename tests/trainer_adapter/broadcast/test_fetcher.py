"""Publisher → 3 real nginx relays → Fetcher, with relays killed, copies corrupted and versions out of order."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.trainer_adapter.broadcast.conftest import free_port, make_checkpoint, same_files
from trainer_adapter.broadcast.errors import CorruptCheckpointError, ManifestError, RelayError, StaleVersionError
from trainer_adapter.broadcast.fetcher import Fetcher
from trainer_adapter.broadcast.layout import LATEST, manifest_path, shard_path
from trainer_adapter.broadcast.manifest import build_manifest, read_shard, sign_manifest
from trainer_adapter.broadcast.publisher import Publisher
from trainer_adapter.broadcast.relay import NginxRelay
from trainer_adapter.broadcast.relay_choice import RelayChoice
from trainer_adapter.inference.weights_client import WeightsClient

SIZES = {"model.safetensors": 600_000, "config.json": 300, "empty.txt": 0}
SHARD = 64 * 1024


def urls(relays: list[NginxRelay]) -> list[str]:
    return [r.url for r in relays]


def corrupt(relay: NginxRelay, step: int, index: int) -> None:
    path = relay.data_dir / shard_path(step, index)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


async def test_a_published_version_arrives_whole_and_relays_keep_only_the_newest(relays, tmp_path: Path) -> None:
    async with Publisher(urls(relays), keep=2, shard_size=SHARD) as publisher:
        for step in range(4):
            result = await publisher.publish(make_checkpoint(tmp_path / f"ckpt{step}", step, SIZES), step)
            assert not result.failed
        assert [await publisher.versions(r.url) for r in relays] == [[2, 3]] * 3
    async with Fetcher(urls(relays), tmp_path / "node") as fetcher:
        assert await fetcher.latest_step() == 3
        folder = await fetcher.load(3)
    assert folder == tmp_path / "node" / "step_3" and same_files(folder, tmp_path / "ckpt3")
    assert not list((tmp_path / "node").glob(".*partial"))


async def test_shards_are_fetched_while_the_version_is_still_being_published(relays, tmp_path: Path) -> None:
    # Slow uploads: the fetcher sees the manifest first, then polls for each shard until it is there.
    ckpt = make_checkpoint(tmp_path / "ckpt", 1, SIZES)
    async with Fetcher(urls(relays), tmp_path / "node", poll_interval=0.05) as fetcher:
        fetch = asyncio.create_task(fetcher.fetch(1))
        await asyncio.sleep(0.3)
        assert not fetch.done()
        async with Publisher(urls(relays), shard_size=SHARD, concurrency=1) as publisher:
            await publisher.publish(ckpt, 1)
        assert same_files(await fetch, ckpt)


async def test_a_relay_killed_mid_download_leaves_the_others_to_finish_it(start_relays, tmp_path: Path) -> None:
    relays = start_relays(3, rate_limit_bytes=200_000)  # a 64 KiB shard takes ~0.3 s from any relay
    ckpt = make_checkpoint(tmp_path / "ckpt", 2, SIZES)
    async with Publisher(urls(relays), shard_size=SHARD) as publisher:
        await publisher.publish(ckpt, 2)
    victim = relays[0]
    choice = RelayChoice(urls(relays), explore=0.0, seed=3)
    async with Fetcher(urls(relays), tmp_path / "node", concurrency=6, choice=choice) as fetcher:
        fetch = asyncio.create_task(fetcher.fetch(2))
        # Once the victim has served a shard it is serving more (each relay gets about a third of them).
        while choice.scores[victim.url].bandwidth is None and not fetch.done():
            await asyncio.sleep(0.01)
        assert not fetch.done()
        victim.kill()
        folder = await fetch
    assert same_files(folder, ckpt)
    assert choice.scores[victim.url].success < 1.0  # its cut transfers were counted against it


async def test_a_copy_corrupted_on_one_relay_is_fetched_again_from_another(relays, tmp_path: Path) -> None:
    ckpt = make_checkpoint(tmp_path / "ckpt", 4, SIZES)
    async with Publisher(urls(relays), shard_size=SHARD) as publisher:
        await publisher.publish(ckpt, 4)
    for index in range(3):
        corrupt(relays[1], 4, index)
    choice = RelayChoice(urls(relays), seed=0)
    # The corrupt relay is the only one measured fast, so it is the first choice for every shard.
    choice.record_success(relays[1].url, 10**9, 1.0)
    async with Fetcher(urls(relays), tmp_path / "node", concurrency=1, choice=choice) as fetcher:
        assert same_files(await fetcher.fetch(4), ckpt)
    assert choice.scores[relays[1].url].success < 1.0


async def test_a_shard_corrupt_everywhere_discards_the_version_and_the_next_is_taken(relays, tmp_path) -> None:
    async with Publisher(urls(relays), shard_size=SHARD) as publisher:
        await publisher.publish(make_checkpoint(tmp_path / "ckpt5", 5, SIZES), 5)
        for relay in relays:
            corrupt(relay, 5, 7)
        async with Fetcher(urls(relays), tmp_path / "node", poll_interval=0.05) as fetcher:
            with pytest.raises(CorruptCheckpointError, match="shard 7 matches its sha256 on no relay"):
                await fetcher.fetch(5)
            assert not list((tmp_path / "node").iterdir())  # the partial folder is gone
            follow = asyncio.create_task(fetcher.follow(until_step=6))
            while 5 not in fetcher.discarded and not follow.done():
                await asyncio.sleep(0.05)
            assert fetcher.loaded_step is None
            await publisher.publish(make_checkpoint(tmp_path / "ckpt6", 6, SIZES), 6)
            await asyncio.wait_for(follow, 30)
    assert fetcher.loaded_step == 6 and same_files(tmp_path / "node" / "step_6", tmp_path / "ckpt6")


async def test_a_version_older_than_the_loaded_one_is_refused(relays, tmp_path: Path) -> None:
    async with Publisher(urls(relays), shard_size=SHARD) as publisher:
        for step in (7, 8):
            await publisher.publish(make_checkpoint(tmp_path / f"ckpt{step}", step, SIZES), step)
    async with Fetcher(urls(relays), tmp_path / "node") as fetcher:
        await fetcher.load(8)
        for stale in (7, 8):
            with pytest.raises(StaleVersionError, match=f"step {stale} is not newer than the loaded step 8"):
                await fetcher.load(stale)
        # A relay that announces an older version (say, restored from a backup) does not move the node back.
        for relay in relays:
            (relay.data_dir / LATEST).write_text(json.dumps({"step": 7}))
        await fetcher.follow(until_step=8)
        assert fetcher.loaded_step == 8 and not (tmp_path / "node" / "step_7").exists()


async def test_nonsense_from_relays_is_a_clear_error(relays, tmp_path: Path) -> None:
    ckpt = make_checkpoint(tmp_path / "ckpt", 9, SIZES)
    async with Publisher(urls(relays), shard_size=SHARD) as publisher:
        await publisher.publish(ckpt, 9)
    (relays[0].data_dir / LATEST).write_text("not json")
    (relays[1].data_dir / LATEST).write_text('{"step": "nine"}')
    async with Fetcher(urls(relays), tmp_path / "node", shard_timeout=0.5, poll_interval=0.05) as fetcher:
        assert await fetcher.latest_step() == 9  # the one relay that makes sense
        for relay in relays:
            (relay.data_dir / manifest_path(9)).write_text('{"step": 9, "shards": "x"}')
        with pytest.raises(CorruptCheckpointError, match="no relay has a valid manifest"):
            await fetcher.fetch(9)
        with pytest.raises(RelayError, match="step 10: no relay served its manifest within 0.5 s"):
            await fetcher.fetch(10)


async def test_a_version_the_trainer_did_not_sign_is_refused_and_never_blocks_the_next(relays, tmp_path: Path) -> None:
    # The attack replayed (the relays now refuse writes without the secret, so it goes straight to their disks):
    # version 999999 on every relay — a checkpoint, a manifest whose shard hashes match it, latest.json pointing
    # at it — with the manifest signed by another run's secret, or not signed at all.
    forged = make_checkpoint(tmp_path / "forged", 999999, SIZES)
    manifest = sign_manifest(build_manifest(forged, 999999, SHARD), "another-runs-secret-0123456789")
    for number, relay in enumerate(relays):
        signed = manifest if number else manifest.model_copy(update={"signature": ""})
        (relay.data_dir / "999999").mkdir(parents=True)
        (relay.data_dir / manifest_path(999999)).write_text(signed.model_dump_json())
        for shard in manifest.shards:
            (relay.data_dir / shard_path(999999, shard.index)).write_bytes(read_shard(forged, shard))
        (relay.data_dir / LATEST).write_text(json.dumps({"step": 999999}))
    async with Fetcher(urls(relays), tmp_path / "node", poll_interval=0.05, shard_timeout=5) as fetcher:
        assert await fetcher.latest_step() == 999999
        with pytest.raises(CorruptCheckpointError, match="not signed|did not make"):
            await fetcher.fetch(999999)
        follow = asyncio.create_task(fetcher.follow(until_step=5))
        await asyncio.sleep(0.5)
        assert fetcher.loaded_step is None and 999999 in fetcher.discarded
        async with Publisher(urls(relays), shard_size=SHARD) as publisher:  # the trainer's own next version
            await publisher.publish(make_checkpoint(tmp_path / "ckpt5", 5, SIZES), 5)
        for relay in relays:  # and the forger keeps announcing its own
            (relay.data_dir / LATEST).write_text(json.dumps({"step": 999999}))
        await asyncio.wait_for(follow, 30)
    assert fetcher.loaded_step == 5 and same_files(tmp_path / "node" / "step_5", tmp_path / "ckpt5")
    assert not (tmp_path / "node" / "step_999999").exists()


async def test_a_shard_missing_everywhere_fails_after_the_deadline(relays, tmp_path: Path) -> None:
    async with Publisher(urls(relays), shard_size=SHARD) as publisher:
        await publisher.publish(make_checkpoint(tmp_path / "ckpt", 11, SIZES), 11)
    for relay in relays:
        (relay.data_dir / shard_path(11, 2)).unlink()
    async with Fetcher(urls(relays), tmp_path / "node", shard_timeout=0.5, poll_interval=0.05) as fetcher:
        with pytest.raises(RelayError, match="shard 2 not served by any relay within 0.5 s"):
            await fetcher.fetch(11)


async def test_publishing_goes_on_without_a_dead_relay_and_fails_without_any(relays, tmp_path: Path) -> None:
    ckpt = make_checkpoint(tmp_path / "ckpt", 12, SIZES)
    async with Publisher(urls(relays), shard_size=SHARD) as publisher:
        with pytest.raises(ManifestError, match="is not a folder with files in it"):
            await publisher.publish(tmp_path / "nowhere", 12)
        assert [await publisher.versions(r.url) for r in relays] == [[]] * 3  # nothing went up
    relays[2].kill()
    async with Publisher(urls(relays), shard_size=SHARD) as publisher:
        result = await publisher.publish(ckpt, 12)
        assert list(result.failed) == [relays[2].url]
        relays[0].kill()
        relays[1].kill()
        with pytest.raises(RelayError, match="no relay took step 13"):
            await publisher.publish(ckpt, 13)


def test_publishing_and_following_need_the_run_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VF_RUN_SECRET", raising=False)
    with pytest.raises(RelayError, match="needs the run secret"):
        Publisher(["http://127.0.0.1:9/"])
    with pytest.raises(RelayError, match="needs the run secret"):
        Fetcher(["http://127.0.0.1:9/"], tmp_path)


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one relay"):
        Fetcher([], tmp_path)
    with pytest.raises(ValueError, match="concurrency"):
        Fetcher(["http://127.0.0.1:9/"], tmp_path, concurrency=0)
    with pytest.raises(ValueError, match="same relay URLs"):
        Fetcher(["http://127.0.0.1:9"], tmp_path, choice=RelayChoice(["http://127.0.0.1:9"]))
    with pytest.raises(ValueError, match="keep"):
        Publisher(["http://127.0.0.1:9/"], keep=0)


async def test_following_waits_out_relays_that_lack_a_shard_and_a_server_that_is_down(relays, tmp_path) -> None:
    async with Publisher(urls(relays), shard_size=SHARD) as publisher:
        await publisher.publish(make_checkpoint(tmp_path / "ckpt", 14, SIZES), 14)
    kept = (relays[0].data_dir / shard_path(14, 3)).read_bytes()
    for relay in relays:
        (relay.data_dir / shard_path(14, 3)).unlink()
    async with Fetcher(urls(relays), tmp_path / "node", shard_timeout=0.2, poll_interval=0.05) as fetcher:
        follow = asyncio.create_task(fetcher.follow(until_step=14))
        await asyncio.sleep(1.0)  # several tries, each failing past its deadline
        assert not follow.done() and fetcher.loaded_step is None and not fetcher.discarded
        (relays[2].data_dir / shard_path(14, 3)).write_bytes(kept)
        await asyncio.wait_for(follow, 30)
    assert same_files(tmp_path / "node" / "step_14", tmp_path / "ckpt")
    # A server that does not answer: the version is kept for a later try, not discarded.
    weights = WeightsClient(f"http://127.0.0.1:{free_port()}/v1", timeout=2)
    async with weights, Fetcher(urls(relays), tmp_path / "other", weights, poll_interval=0.05) as fetcher:
        follow = asyncio.create_task(fetcher.follow(until_step=14))
        await asyncio.sleep(1.0)
        assert not follow.done() and fetcher.loaded_step is None and not fetcher.discarded
        follow.cancel()
