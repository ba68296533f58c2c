"""An inference node's side: find the newest version on the relays, fetch its shards, verify, load.

Shards are fetched ``concurrency`` at a time, each from a relay drawn by ``RelayChoice``; a shard not yet
on a relay (the publisher still uploading) is polled for until ``shard_timeout``. Every shard's sha256 is
checked as it arrives, and a copy that does not match is fetched again from another relay; when no relay has
a good copy, the version is discarded (``CorruptCheckpointError``) and ``follow`` waits for the next one.
The shards are written in place into a temporary folder that is renamed once every file and the whole
checkpoint match the manifest; that folder is what ``WeightsClient.update`` loads::

    async with Fetcher(relays, dest=Path("/tmp/weights"), weights=WeightsClient(url)) as fetcher:
        await fetcher.follow(until_step=10)
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from trainer_adapter.broadcast.config import BroadcastConfig
from trainer_adapter.broadcast.errors import CorruptCheckpointError, ManifestError, RelayError, StaleVersionError
from trainer_adapter.broadcast.layout import LATEST, manifest_path, shard_path
from trainer_adapter.broadcast.manifest import Manifest, ShardEntry, parse_manifest, verify_manifest
from trainer_adapter.broadcast.relay_choice import RelayChoice
from trainer_adapter.inference.errors import InferenceServerError, WeightsFolderError, WeightUpdateError
from trainer_adapter.inference.run_secret import RUN_SECRET_VAR, run_secret
from trainer_adapter.inference.weights_client import WeightsClient

log = logging.getLogger(__name__)

RESTART_CHECK_S = 2.0
"""How often a follower that is up to date asks its server whether it still serves the loaded version (every
poll would fill the server's access log with ``GET /weights``)."""


class Fetcher:
    """Fetches checkpoint versions from relays into ``dest/step_N`` and loads them into one inference server."""

    def __init__(
        self,
        relays: list[str],
        dest: Path,
        weights: WeightsClient | None = None,
        concurrency: int = 8,
        poll_interval: float = 0.2,
        shard_timeout: float = 300.0,
        keep_local: int = 2,
        choice: RelayChoice | None = None,
        secret: str | None = None,
    ) -> None:
        if not relays:
            raise ValueError("at least one relay is needed")
        if concurrency < 1 or keep_local < 1 or poll_interval <= 0 or shard_timeout <= 0:
            raise ValueError("concurrency and keep_local must be >= 1, poll_interval and shard_timeout > 0")
        self.relays = [r if r.endswith("/") else r + "/" for r in relays]
        self.dest = dest
        self.weights = weights
        self.concurrency = concurrency
        self.poll_interval = poll_interval
        self.shard_timeout = shard_timeout
        self.keep_local = keep_local
        self.choice = choice or RelayChoice(self.relays)
        if set(self.choice.relays) != set(self.relays):
            raise ValueError("the relay choice must be over the same relay URLs (with their trailing '/')")
        self.loaded_step: int | None = None
        self.discarded: set[int] = set()
        self._next_restart_check = 0.0
        secret = secret if secret is not None else run_secret()
        if not secret:
            raise RelayError(f"following relays needs the run secret ({RUN_SECRET_VAR}): they serve only with it, "
                             "and a version is loaded only if it signed the manifest")
        self._secret = secret
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(60.0, connect=5.0),
                                       limits=httpx.Limits(max_connections=concurrency + len(relays)),
                                       headers={"Authorization": f"Bearer {secret}"})  # fmt: skip

    @classmethod
    def from_config(cls, config: BroadcastConfig, weights: WeightsClient | None = None) -> Fetcher:
        """A node's fetcher with the ``[broadcast]`` table's settings."""
        return cls(config.relays, config.fetch_dir, weights, concurrency=config.fetch_concurrency,
                   poll_interval=config.poll_interval_s, shard_timeout=config.shard_timeout_s,
                   choice=RelayChoice(config.relays, explore=config.exploration))  # fmt: skip

    async def latest_step(self) -> int | None:
        """The newest version the relays announce in ``latest.json``, discarded versions aside (relays that are
        down or answer nonsense are skipped); where a relay announces nothing usable (or only a discarded
        version), the version folders it lists. So a version the trainer never published cannot hide its next
        one, and a poll costs one small GET a relay while the announcements are sound."""
        answers = await asyncio.gather(*(self._steps_on(r) for r in self.relays))
        steps = {s for found in answers for s in found if s not in self.discarded}
        return max(steps, default=None)

    async def _steps_on(self, relay: str) -> set[int]:
        try:
            data = await self._get(relay, LATEST)
            step = json.loads(data)["step"] if data is not None else None
            if isinstance(step, int) and not isinstance(step, bool) and step >= 0 and step not in self.discarded:
                return {step}
            listing = await self._get(relay, "")
            entries = json.loads(listing) if listing is not None else []
            return {int(e["name"]) for e in entries if isinstance(e, dict) and e.get("type") == "directory"
                    and isinstance(e.get("name"), str) and e["name"].isdigit() and len(e["name"]) < 19}
        except (httpx.HTTPError, RelayError, ValueError, TypeError, KeyError) as exc:
            log.warning("relay %s: no usable %s or listing (%s)", relay, LATEST, exc)
            return set()

    async def load(self, step: int) -> Path:
        """Fetch version ``step`` and load it into the server; refuses a version no newer than the loaded one."""
        self._refuse_stale(step)
        started = time.monotonic()
        folder = await self.fetch(step)
        if self.weights is not None:
            await self.weights.update(str(folder))
        self.loaded_step = step
        log.info("step %d loaded from %s in %.2f s", step, folder, time.monotonic() - started)
        self._prune_local()
        return folder

    async def follow(self, until_step: int | None = None) -> None:
        """Load each new version as it is announced; returns once ``until_step`` (or newer) is loaded.

        A version that cannot be used is discarded and the next one awaited; one that cannot be fetched or
        loaded for now (relays or server away) is tried again at the next poll."""
        while until_step is None or self.loaded_step is None or self.loaded_step < until_step:
            step = await self.latest_step()
            # Step 0 is a version too (a run's initial weights): `loaded_step or -1` would load it again and again.
            newer = step is not None and (self.loaded_step is None or self.loaded_step < step)
            if step is not None and newer and step not in self.discarded:
                try:
                    await self.load(step)
                    continue
                except (CorruptCheckpointError, WeightsFolderError, WeightUpdateError) as exc:
                    # The version itself is unusable (bad bytes, or weights the served model cannot take).
                    log.warning("step %d discarded: %s", step, exc)
                    self.discarded.add(step)
                    continue
                except (RelayError, InferenceServerError) as exc:
                    # Relays or the server are away for now: the same version is tried again.
                    log.warning("step %d not loaded yet: %s", step, exc)
            else:
                await self._reload_if_restarted()
            await asyncio.sleep(self.poll_interval)

    async def _reload_if_restarted(self) -> None:
        """Load the loaded version again into a server that no longer serves it.

        A restarted server comes back on its launch weights while this follower still counts its last version
        as loaded; the orchestrator waits for the server to name that version before taking it back."""
        if self.weights is None or self.loaded_step is None or time.monotonic() < self._next_restart_check:
            return
        self._next_restart_check = time.monotonic() + RESTART_CHECK_S
        folder = self.dest / f"step_{self.loaded_step}"
        try:
            held = (await self.weights.current()).get("weight_dir")
            if held is None or Path(str(held)).name != folder.name:
                log.info("the server holds %s, not step %d: loading it again", held or "its base", self.loaded_step)
                await self.weights.update(str(folder))
        except (InferenceServerError, WeightsFolderError, WeightUpdateError) as exc:
            log.info("server not reloaded yet: %s", exc)  # down or restarting: asked again at the next poll

    async def fetch(self, step: int) -> Path:
        """Version ``step`` verified and assembled in ``dest/step_<step>``; nothing is left behind on failure."""
        self._refuse_stale(step)
        manifest = await self._manifest(step)
        final = self.dest / f"step_{step}"
        partial = self.dest / f".step_{step}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        try:
            with _open_files(partial, manifest) as fds:
                gate = asyncio.Semaphore(self.concurrency)

                async def one(shard: ShardEntry) -> None:
                    async with gate:
                        data = await self._shard(step, shard)
                        await asyncio.to_thread(os.pwrite, fds[shard.file], data, shard.offset)

                await asyncio.gather(*(one(s) for s in manifest.shards))
            await asyncio.to_thread(_verify_whole, partial, manifest)
            shutil.rmtree(final, ignore_errors=True)
            partial.rename(final)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        return final

    def _refuse_stale(self, step: int) -> None:
        if self.loaded_step is not None and step <= self.loaded_step:
            raise StaleVersionError(f"step {step} is not newer than the loaded step {self.loaded_step}; refused")

    async def _manifest(self, step: int) -> Manifest:
        """The version's manifest from any relay, polled for until one has it; unreadable everywhere = corrupt."""
        deadline = time.monotonic() + self.shard_timeout
        while True:
            bad: dict[str, str] = {}
            for relay in sorted(self.relays, key=self.choice.weight, reverse=True):
                try:
                    raw = await self._get(relay, manifest_path(step))
                except (httpx.HTTPError, RelayError):
                    continue
                if raw is None:
                    continue
                try:
                    manifest = verify_manifest(parse_manifest(raw), self._secret)
                except ManifestError as exc:
                    bad[relay] = str(exc)
                    continue
                if manifest.step == step:
                    return manifest
                bad[relay] = f"manifest says step {manifest.step}"
            if bad and len(bad) == len(self.relays):
                raise CorruptCheckpointError(f"step {step}: no relay has a valid manifest: {bad}")
            if time.monotonic() > deadline:
                raise RelayError(f"step {step}: no relay served its manifest within {self.shard_timeout:g} s")
            await asyncio.sleep(self.poll_interval)

    async def _shard(self, step: int, shard: ShardEntry) -> bytes:
        """One shard's verified bytes, from whichever relay has a good copy first."""
        deadline = time.monotonic() + self.shard_timeout
        mismatched: set[str] = set()
        down: set[str] = set()
        missing: set[str] = set()
        while True:
            relay = self.choice.pick(exclude=mismatched | down | missing)
            started = time.monotonic()
            try:
                data = await self._get(relay, shard_path(step, shard.index))
            except (httpx.HTTPError, RelayError) as exc:
                log.info("shard %d of step %d from %s failed: %r", shard.index, step, relay, exc)
                self.choice.record_failure(relay)
                down.add(relay)
            else:
                if data is None:
                    missing.add(relay)
                elif hashlib.sha256(data).hexdigest() != shard.sha256:
                    log.warning("shard %d of step %d from %s does not match its sha256", shard.index, step, relay)
                    self.choice.record_failure(relay)
                    mismatched.add(relay)
                else:
                    self.choice.record_success(relay, len(data), time.monotonic() - started)
                    return data
            if mismatched and mismatched | down == set(self.relays):
                raise CorruptCheckpointError(f"step {step}: shard {shard.index} matches its sha256 on no relay")
            if mismatched | down | missing == set(self.relays):
                if time.monotonic() > deadline:
                    raise RelayError(f"step {step}: shard {shard.index} not served by any relay "
                                     f"within {self.shard_timeout:g} s")  # fmt: skip
                await asyncio.sleep(self.poll_interval)
                down.clear()
                missing.clear()

    async def _get(self, relay: str, path: str) -> bytes | None:
        """The file's bytes, or None when the relay does not have it (yet)."""
        response = await self._http.get(relay + path)
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise RelayError(f"GET {relay}{path} answered {response.status_code}")
        return response.content

    def _prune_local(self) -> None:
        """Keep the newest ``keep_local`` fetched versions on disk (the loaded one among them)."""
        steps = sorted(int(p.name.removeprefix("step_")) for p in self.dest.glob("step_*")
                       if p.name.removeprefix("step_").isdigit())  # fmt: skip
        for old in steps[: max(len(steps) - self.keep_local, 0)]:
            if old != self.loaded_step:
                shutil.rmtree(self.dest / f"step_{old}", ignore_errors=True)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@contextmanager
def _open_files(folder: Path, manifest: Manifest) -> Iterator[dict[str, int]]:
    """Every file of the checkpoint created at its final size, open for positional writes."""
    fds: dict[str, int] = {}
    try:
        for entry in manifest.files:
            fds[entry.name] = os.open(folder / entry.name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.ftruncate(fds[entry.name], entry.size)
        yield fds
    finally:
        for fd in fds.values():
            os.close(fd)


def _verify_whole(folder: Path, manifest: Manifest) -> None:
    """Every file's and the whole checkpoint's sha256, read back from disk."""
    whole = hashlib.sha256()
    for entry in manifest.files:
        per_file = hashlib.sha256()
        with (folder / entry.name).open("rb") as fh:
            while chunk := fh.read(2**20):
                per_file.update(chunk)
                whole.update(chunk)
        if per_file.hexdigest() != entry.sha256:
            raise CorruptCheckpointError(f"step {manifest.step}: {entry.name} does not match its sha256")
    if whole.hexdigest() != manifest.checkpoint_sha256:
        raise CorruptCheckpointError(f"step {manifest.step}: the checkpoint does not match its sha256")


__all__ = ["Fetcher"]
