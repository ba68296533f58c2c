"""Which inference servers take rollouts: health checks, failover, and rejoining with the current weights.

Each server is *up* (it takes new groups, round robin among the up ones) or *down*. A server goes down when
its ``GET /health`` fails (asked every ``interval_s``) or when a weight update to it fails. The orchestrator
drains it (:meth:`ServerPool.take_lost`): its groups in flight are cancelled, counted, and their problems asked
again on another server. A down server is polled at ``interval_s``, the wait doubling up to ``max_backoff_s``;
once it answers 200 it first loads the weights the others hold (a restarted vLLM server starts on its launch
weights and missed every version since) and only then takes groups again. Weight updates go to the up
servers only, so one server being down never fails the run; every server down for ``all_down_timeout_s`` does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainer_adapter.inference.errors import InferenceServerError
from verifiers.errors import UsageError

log = logging.getLogger("trainer_adapter.orchestrator")

_TICK_S = 0.05
"""How often the watcher looks for a server whose probe is due (probes themselves follow the config)."""


class WeightUpdater(Protocol):
    """Loads a weights folder into one inference server (``WeightsClient`` in production)."""

    async def update(self, weight_dir: str) -> Any: ...


class ServerAdmin(WeightUpdater, Protocol):
    """A weight updater that also answers whether its server is healthy (``WeightsClient`` in production)."""

    async def healthy(self, timeout: float) -> bool: ...


class HealthConfig(BaseModel):
    """How the orchestrator watches its inference servers (``[inference.health]``)."""

    model_config = ConfigDict(extra="forbid")

    interval_s: float = Field(
        2.0, gt=0, description="Ask every server's GET /health this often; a server that fails it (or a weight "
        "update) stops taking rollouts, and its groups in flight are asked again on the others.")
    max_backoff_s: float = Field(
        30.0, gt=0, description="A down server is polled at interval_s, the wait doubling after each failed poll up "
        "to this; when it answers it loads the current weights, then takes rollouts again.")
    all_down_timeout_s: float = Field(
        600.0, gt=0, description="Stop the run with an error when no server has been up for this long.")

    @model_validator(mode="after")
    def _backoff_covers_interval(self) -> HealthConfig:
        if self.max_backoff_s < self.interval_s:
            raise ValueError(f"max_backoff_s ({self.max_backoff_s}) must be >= interval_s ({self.interval_s})")
        return self

    @property
    def probe_timeout_s(self) -> float:
        """A probe's time limit: the interval, but never under 5 s (a server busy generating answers late)."""
        return max(self.interval_s, 5.0)


@dataclass
class _Server:
    admin: WeightUpdater
    up: bool = True
    next_probe: float = 0.0
    backoff: float = 0.0
    """The current wait between polls while down (0 while up)."""
    excluded: bool = False
    """Caught by the validator: down for good."""


class ServerPool:
    """The servers behind the orchestrator's clients, by index; see the module docstring.

    Without ``config`` nothing is probed and a failed weight update raises, as with a single server; with it,
    every admin must be a :class:`ServerAdmin`.
    """

    def __init__(self, admins: Sequence[WeightUpdater], config: HealthConfig | None = None,
                 weight_dir: str | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        """``weight_dir``: the weights every server holds now (what a rejoining server loads until an update)."""
        if not admins:
            raise ValueError("need at least one inference server")
        self.config = config
        self.servers = [_Server(admin) for admin in admins]
        self.version = 0
        """The weights version the up servers hold (set once an update has reached them)."""
        self.current: tuple[int, str | None] = (0, weight_dir)
        """The newest version sent to the servers and its folder: what a server that comes back loads."""
        self.counts: Counter[str] = Counter()
        """``server_down`` and ``server_rejoined`` events, for the metrics line."""
        self._clock = clock
        self._next = 0
        self._lost: list[int] = []
        self._all_down_since: float | None = None

    # -- membership --------------------------------------------------------------------------

    def up(self) -> list[int]:
        """Indices of the servers that take rollouts."""
        return [i for i, server in enumerate(self.servers) if server.up]

    def pick(self) -> int | None:
        """The next up server, round robin; None when every server is down."""
        for _ in range(len(self.servers)):
            index, self._next = self._next, (self._next + 1) % len(self.servers)
            if self.servers[index].up:
                return index
        return None

    @property
    def next_index(self) -> int:
        """Where round robin continues (saved with the orchestrator's state)."""
        return self._next

    @next_index.setter
    def next_index(self, index: int) -> None:
        self._next = index % len(self.servers)

    def mark_down(self, index: int, why: str) -> None:
        """Stop sending rollouts to server ``index``; its groups in flight are handed back by :meth:`take_lost`."""
        server = self.servers[index]
        if not server.up:
            return
        if self.config is None:
            raise InferenceServerError(f"inference server {index} failed: {why}")
        server.up, server.backoff = False, self.config.interval_s
        server.next_probe = self._clock() + server.backoff
        self._lost.append(index)
        self.counts["server_down"] += 1
        log.warning("inference server %d is down (%s); its rollouts go to the %d others until it answers /health "
                    "again", index, why, len(self.up()))
        if not self.up():
            self._all_down_since = self._clock()

    def exclude(self, index: int, why: str) -> None:
        """Take server ``index`` out for the rest of the run (its groups in flight are handed back by
        :meth:`take_lost`); it is never probed again."""
        server = self.servers[index]
        if server.excluded:
            return
        server.excluded = True
        if server.up:
            server.up = False
            self._lost.append(index)
        self.counts["server_excluded"] += 1
        log.warning("inference server %d is excluded for the rest of the run (%s); its rollouts go to the %d others",
                    index, why, len(self.up()))

    def suspect(self, index: int) -> None:
        """Probe server ``index`` at once (one of its rollouts failed): a dead server is found before the next
        interval, so fewer of its rollouts fail on their own."""
        if self.servers[index].up:
            self.servers[index].next_probe = 0.0

    def take_lost(self) -> list[int]:
        """Servers that went down since the last call: their groups in flight are lost."""
        lost, self._lost = self._lost, []
        return lost

    def check(self) -> None:
        """Raise :class:`InferenceServerError` when every server has been down for ``all_down_timeout_s``, or
        every one was excluded."""
        if all(server.excluded for server in self.servers):
            raise InferenceServerError(f"all {len(self.servers)} inference servers were excluded by the validator "
                                       "(orchestrator.validation; their rejected groups are in the metrics line)")
        if self.config is None or self._all_down_since is None:
            return
        if self._clock() - self._all_down_since > self.config.all_down_timeout_s:
            raise InferenceServerError(f"all {len(self.servers)} inference servers have been down for more than "
                                       f"{self.config.all_down_timeout_s:.0f} s (inference.health.all_down_timeout_s)")

    # -- weights -----------------------------------------------------------------------------

    async def update(self, weight_dir: str, version: int) -> None:
        """Load ``weight_dir`` (version ``version``) into every up server; a server that fails to load goes down.

        A folder the model cannot take (:class:`UsageError`) is the run's error, not a server's: it is raised.
        """
        self.current = (version, weight_dir)
        targets = self.up()
        results = await asyncio.gather(*(self.servers[i].admin.update(weight_dir) for i in targets),
                                       return_exceptions=True)
        self.version = version
        for index, result in zip(targets, results):
            if isinstance(result, UsageError) or (isinstance(result, BaseException) and self.config is None):
                raise result
            if isinstance(result, BaseException):
                self.mark_down(index, f"weight update to version {version} failed: {result!r}")

    async def _rejoin(self, index: int) -> bool:
        """Bring a server that answers again to the current weights; True once it holds them."""
        server = self.servers[index]
        loaded: tuple[int, str | None] | None = None
        while loaded != self.current:  # an update may be sent while this one loads: load until it holds the last
            target = self.current
            if target[1] is not None:
                try:
                    await server.admin.update(target[1])
                except Exception as e:  # noqa: BLE001 - any failure leaves it down, to be polled again
                    log.warning("inference server %d answers but could not load %s: %r", index, target[1], e)
                    return False
            loaded = target
        return True

    # -- the watcher -------------------------------------------------------------------------

    async def watch(self) -> None:
        """Probe the servers whose time has come, for ever (run it as a task beside the orchestrator's loop)."""
        if self.config is None:
            return
        probing: dict[int, asyncio.Task[None]] = {}
        try:
            while True:
                now = self._clock()
                for index, server in enumerate(self.servers):
                    if index not in probing and server.next_probe <= now and not server.excluded:
                        probing[index] = asyncio.create_task(self._probe(index))
                for index, task in list(probing.items()):
                    if task.done():
                        del probing[index]
                        task.result()  # a bug in a probe stops the watcher, and check() reports it
                await asyncio.sleep(_TICK_S)
        finally:
            for task in probing.values():
                task.cancel()
            await asyncio.gather(*probing.values(), return_exceptions=True)

    async def _probe(self, index: int) -> None:
        assert self.config is not None
        server = self.servers[index]
        healthy = await cast(ServerAdmin, server.admin).healthy(self.config.probe_timeout_s)
        if server.excluded:  # while the probe was out
            return
        if server.up:
            server.next_probe = self._clock() + self.config.interval_s
            if not healthy:
                self.mark_down(index, "GET /health failed")
            return
        if healthy and await self._rejoin(index) and not server.excluded:
            server.up, server.backoff = True, 0.0
            server.next_probe = self._clock() + self.config.interval_s
            self._all_down_since = None
            self.counts["server_rejoined"] += 1
            log.info("inference server %d is back at weights version %s; it takes rollouts again", index,
                     self.current[0])
            return
        server.backoff = min(server.backoff * 2, self.config.max_backoff_s)
        server.next_probe = self._clock() + server.backoff


__all__ = ["HealthConfig", "ServerAdmin", "ServerPool", "WeightUpdater"]
