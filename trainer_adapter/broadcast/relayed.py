"""The orchestrator's side of a run with relays: server admins that publish a version and wait for it to arrive.

Without relays the orchestrator POSTs each weights folder to every server (``WeightsClient.update``). With
them the servers cannot read that folder, so each server's admin is a :class:`RelayedAdmin`: ``update(folder)``
makes sure the folder is published to the relays — once per version, however many servers ask
(:class:`RelayBroadcast` holds the one :class:`Publisher`) — and then waits until the server's ``GET /weights``
names a ``step_N`` folder (N at least that version): the follower beside it
(``python -m trainer_adapter.broadcast.node``) fetched, verified and loaded it. Errors are the ones
``WeightsClient`` raises, so a server whose follower never loads the version is marked down like one whose
``/update_weights`` failed::

    broadcast = RelayBroadcast(config.broadcast)
    admins = [RelayedAdmin(broadcast, url) for url in urls]
    await admins[0].update("outputs/rl/weights/step_3")   # publishes step 3, waits for server 0 to load it
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import httpx

from trainer_adapter.broadcast.config import BroadcastConfig
from trainer_adapter.broadcast.errors import RelayError
from trainer_adapter.broadcast.layout import LATEST, version_dir
from trainer_adapter.broadcast.publisher import Publisher, PublishResult
from trainer_adapter.inference.errors import InferenceServerError, WeightsFolderError
from trainer_adapter.inference.run_secret import RUN_SECRET_VAR, run_secret
from trainer_adapter.inference.weights_client import WeightsClient

log = logging.getLogger(__name__)

BASE_FOLDER = "base"
"""The run's initial weights (``OUTPUT/base``): version 0 on the relays."""


def _step(name: str) -> int | None:
    number = name.removeprefix("step_")
    return int(number) if name.startswith("step_") and number.isdigit() else None


def folder_version(weight_dir: str | Path) -> int:
    """The version a run's weights folder is published as: ``step_N`` is N, the run's ``base`` is 0."""
    name = Path(weight_dir).name
    if name == BASE_FOLDER:
        return 0
    step = _step(name)
    if step is not None:
        return step
    raise WeightsFolderError(f"{weight_dir}: a folder published to the relays must be named step_N or "
                             f"{BASE_FOLDER} (the run's weights/step_N or its initial weights)")


def loaded_version(weight_dir: object) -> int | None:
    """The version a server reports holding when its ``GET /weights`` names a fetched ``step_N`` folder."""
    if not isinstance(weight_dir, str):
        return None  # None: the server still serves the weights it was started with
    return _step(Path(weight_dir).name)


class RelayBroadcast:
    """The run's one publisher: each version goes to the relays once, whichever servers ask for it and when."""

    def __init__(self, config: BroadcastConfig, publisher: Publisher | None = None) -> None:
        if not config.enabled:
            raise ValueError("a relay broadcast needs relays (BroadcastConfig.relays)")
        self.config = config
        self.publisher = publisher or Publisher.from_config(config)
        self._tasks: dict[int, asyncio.Task[PublishResult]] = {}
        self.published: list[int] = []
        """Versions whose publish completed, in order (what the relays were sent)."""

    async def publish(self, weight_dir: str | Path) -> int:
        """Publish ``weight_dir`` unless this version is already up (or going up); returns its version.

        A publish that failed (every relay down) is forgotten, so the next caller tries again."""
        version = folder_version(weight_dir)
        task = self._tasks.get(version)
        if task is None:
            task = asyncio.ensure_future(self._publish(Path(weight_dir), version))
            self._tasks[version] = task
        # shield: one server's update being cancelled (its admin given up on) must not cancel the others' publish.
        await asyncio.shield(task)
        return version

    async def _publish(self, folder: Path, version: int) -> PublishResult:
        started = time.perf_counter()
        try:
            result = await self.publisher.publish(folder, step=version)
        except BaseException:
            del self._tasks[version]
            raise
        self.published.append(version)
        left_out = f"; left out: {sorted(result.failed)}" if result.failed else ""
        log.info("published step %d to %d relay(s) in %.2f s%s", version,
                 len(self.publisher.relays) - len(result.failed), time.perf_counter() - started, left_out)
        # Older versions' tasks are done and only hold memory; a rejoining server asks for the newest.
        for old in [v for v, t in self._tasks.items() if v < version and t.done()]:
            del self._tasks[old]
        return result

    async def aclose(self) -> None:
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        await self.publisher.aclose()


class RelayedAdmin:
    """One server's admin in a run with relays (the ``ServerAdmin`` protocol of the orchestrator's pool)."""

    def __init__(self, broadcast: RelayBroadcast, url: str, timeout_s: float | None = None,
                 poll_s: float | None = None) -> None:  # fmt: skip
        """``url``: the server's (its ``/v1`` or its root); ``timeout_s``: how long its follower may take to load a
        version (default: the config's ``load_timeout_s``); ``poll_s``: between two ``GET /weights`` (default:
        ``poll_interval_s``)."""
        self.broadcast = broadcast
        self.url = url
        self.weights = WeightsClient(url)
        self.timeout_s = timeout_s if timeout_s is not None else broadcast.config.load_timeout_s
        self.poll_s = poll_s if poll_s is not None else broadcast.config.poll_interval_s

    async def update(self, weight_dir: str) -> dict[str, Any]:
        """Publish ``weight_dir`` (once for all servers) and wait until this server holds it; its ``/weights``."""
        version = await self.broadcast.publish(weight_dir)
        return await self.wait_loaded(version)

    async def wait_loaded(self, version: int) -> dict[str, Any]:
        """Until the server's ``GET /weights`` names ``step_M`` with M >= ``version``; raises
        :class:`InferenceServerError` when it cannot be asked or has not loaded it within ``timeout_s``."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            info = await self.weights.current()
            held = loaded_version(info.get("weight_dir"))
            if held is not None and held >= version:
                return info
            if time.monotonic() > deadline:
                raise InferenceServerError(
                    f"the server at {self.url} did not load step {version} from the relays within "
                    f"{self.timeout_s:g} s (broadcast.load_timeout_s); it holds {info.get('weight_dir') or 'its base'}"
                    ": is its follower (python -m trainer_adapter.broadcast.node) running, and are the relays up?")
            await asyncio.sleep(self.poll_s)

    async def healthy(self, timeout: float) -> bool:
        return await self.weights.healthy(timeout)

    async def aclose(self) -> None:
        await self.weights.aclose()


async def clear_relays(config: BroadcastConfig, timeout_s: float = 10.0) -> list[str]:
    """Empty the relays before a run publishes to them; returns the relays that answered.

    A relay still holding another run's versions would announce them (a follower would load that run's
    weights, then refuse this run's lower steps as stale) and serve old shards under this run's names. A
    relay that does not answer is skipped (it may come back; the publisher leaves out relays that fail);
    none answering is a :class:`RelayError` naming each one's reason, raised before anything starts."""
    reasons: dict[str, str] = {}
    secret = run_secret()
    if not secret:
        raise RelayError(f"the relays need the run secret ({RUN_SECRET_VAR}) they were started with")
    async with httpx.AsyncClient(timeout=timeout_s, headers={"Authorization": f"Bearer {secret}"}) as http:

        async def clear(relay: str) -> None:
            try:
                listing = await http.get(relay)
                if listing.status_code != 200:
                    raise RelayError(f"GET answered {listing.status_code}")
                folders = [e["name"] for e in listing.json() if e.get("type") == "directory"]
                for name in [LATEST] + [version_dir(int(n)) for n in folders if n.isdigit()]:
                    response = await http.delete(relay + name)
                    if response.status_code not in (200, 204, 404):
                        raise RelayError(f"DELETE {name} answered {response.status_code}")
            except (httpx.HTTPError, RelayError, ValueError, KeyError, TypeError) as exc:
                reasons[relay] = str(exc) or type(exc).__name__

        await asyncio.gather(*(clear(r) for r in config.relays))
    if len(reasons) == len(config.relays):
        detail = "; ".join(f"{r}: {why}" for r, why in reasons.items())
        raise RelayError(f"no relay answers ({detail}): start them first, e.g. "
                         "python -m trainer_adapter.broadcast.relay --port 8101 --dir DIR")
    for relay, why in reasons.items():
        log.warning("relay %s did not answer at the start of the run (left out until it does): %s", relay, why)
    return [r for r in config.relays if r not in reasons]


__all__ = ["BASE_FOLDER", "RelayBroadcast", "RelayedAdmin", "clear_relays", "folder_version", "loaded_version"]
