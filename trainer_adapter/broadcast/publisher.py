"""The trainer's side: one step's weights folder, as shards and a manifest, uploaded to every relay.

Order on each relay: the manifest, then ``latest.json`` (so nodes start fetching while shards are still
going up), then the shards, then the versions beyond the newest ``keep`` are deleted. A relay that fails
is left out of the rest of this version (logged) — the nodes fetch from the others; only if every relay
fails is the publish an error::

    async with Publisher(["http://10.0.0.5:8101/", "http://10.0.0.6:8101/"], keep=3) as publisher:
        result = await publisher.publish(Path("broadcasts/step_3"), step=3)
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from trainer_adapter.broadcast.config import BroadcastConfig
from trainer_adapter.broadcast.errors import RelayError
from trainer_adapter.broadcast.layout import LATEST, manifest_path, shard_path, version_dir
from trainer_adapter.broadcast.manifest import Manifest, ShardEntry, build_manifest, read_shard, sign_manifest
from trainer_adapter.inference.run_secret import RUN_SECRET_VAR, run_secret

log = logging.getLogger(__name__)


@dataclass
class PublishResult:
    """The version's manifest, and the relays that failed during it (with why)."""

    manifest: Manifest
    failed: dict[str, str] = field(default_factory=dict)


class Publisher:
    """Uploads checkpoints to relays over WebDAV PUT and keeps only the newest ``keep`` versions on them."""

    def __init__(self, relays: list[str], keep: int = 3, shard_size: int = 8 * 2**20, concurrency: int = 4,
                 timeout: float = 120.0, secret: str | None = None) -> None:  # fmt: skip
        if not relays:
            raise ValueError("at least one relay is needed")
        secret = secret if secret is not None else run_secret()
        if not secret:
            raise RelayError(f"publishing to relays needs the run secret ({RUN_SECRET_VAR}): relays take writes only "
                             "with it, and followers load only manifests it signed")
        self._secret = secret
        if keep < 1 or shard_size < 1 or concurrency < 1:
            raise ValueError(f"keep, shard_size and concurrency must be >= 1, got {keep}, {shard_size}, {concurrency}")
        self.relays = [r if r.endswith("/") else r + "/" for r in relays]
        self.keep = keep
        self.shard_size = shard_size
        self.concurrency = concurrency
        self._http = httpx.AsyncClient(timeout=timeout, headers={"Authorization": f"Bearer {secret}"})

    @classmethod
    def from_config(cls, config: BroadcastConfig) -> Publisher:
        """The trainer's publisher with the ``[broadcast]`` table's settings."""
        return cls(config.relays, keep=config.keep_versions, shard_size=config.shard_bytes,
                   concurrency=config.upload_concurrency)  # fmt: skip

    async def publish(self, folder: Path, step: int) -> PublishResult:
        """Upload ``folder`` as version ``step``; returns once every live relay holds all of it."""
        built = await asyncio.to_thread(build_manifest, folder, step, self.shard_size)
        manifest = sign_manifest(built, self._secret)
        result = PublishResult(manifest)
        body = manifest.model_dump_json().encode()
        await self._each_relay(result, lambda relay: self._put(relay, manifest_path(step), body))
        await self._each_relay(result, lambda relay: self._put(relay, LATEST, json.dumps({"step": step}).encode()))
        gate = asyncio.Semaphore(self.concurrency)

        async def one(shard: ShardEntry) -> None:
            async with gate:
                data = await asyncio.to_thread(read_shard, folder, shard)
                await self._each_relay(result, lambda relay: self._put(relay, shard_path(step, shard.index), data))

        await asyncio.gather(*(one(s) for s in manifest.shards))
        await self._each_relay(result, lambda relay: self._prune(relay, step))
        return result

    async def _each_relay(self, result: PublishResult, action: Callable[[str], Awaitable[None]]) -> None:
        live = [r for r in self.relays if r not in result.failed]
        outcomes = await asyncio.gather(*(action(r) for r in live), return_exceptions=True)
        for relay, outcome in zip(live, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, httpx.HTTPError | RelayError):
                    raise outcome
                log.warning("relay %s left out of step %d: %s", relay, result.manifest.step, outcome)
                result.failed[relay] = str(outcome) or type(outcome).__name__
        if len(result.failed) == len(self.relays):
            raise RelayError(f"no relay took step {result.manifest.step}: {result.failed}")

    async def _put(self, relay: str, path: str, data: bytes) -> None:
        response = await self._http.put(relay + path, content=data)
        if response.status_code not in (200, 201, 204):
            raise RelayError(f"PUT {relay}{path} answered {response.status_code}")

    async def versions(self, relay: str) -> list[int]:
        """The versions a relay holds (its numbered folders), oldest first."""
        response = await self._http.get(relay)
        if response.status_code != 200:
            raise RelayError(f"GET {relay} answered {response.status_code}")
        entries = response.json()
        return sorted(int(e["name"]) for e in entries if e.get("type") == "directory" and e["name"].isdigit())

    async def _prune(self, relay: str, current: int) -> None:
        """Delete all but the newest ``keep`` versions (never ``current``)."""
        steps = await self.versions(relay)
        for step in steps[: max(len(steps) - self.keep, 0)]:
            if step == current:
                continue
            response = await self._http.delete(relay + version_dir(step))
            if response.status_code not in (200, 204, 404):
                raise RelayError(f"DELETE {relay}{version_dir(step)} answered {response.status_code}")

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Publisher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


__all__ = ["PublishResult", "Publisher"]
