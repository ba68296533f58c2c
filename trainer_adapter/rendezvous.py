"""How the nodes of an RL run find each other: the head publishes each launch's id in the run folder once its
files are written; the other nodes wait for that id (``trainer_adapter.cluster``'s roles); the head waits for
the servers named in ``inference.urls`` to answer (docs/cluster.md)."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainer_adapter.errors import TrainerError
from trainer_adapter.inference.errors import InferenceServerError

LAUNCH_ID_ENV = "VF_LAUNCH_ID"
LAUNCH_FILE = "launch_id"


class LaunchWaitError(TrainerError):
    """A node waited for the head's launch longer than it was told to."""


def publish_launch(root: Path) -> str:
    """Say that ``root`` is ready for this launch's other nodes; returns the launch's id (``$VF_LAUNCH_ID``, or a
    new one). Call it once the initial weights and the trainer's config are written: a node reads them next."""
    launch_id = os.environ.get(LAUNCH_ID_ENV) or uuid.uuid4().hex
    partial = root / f".{LAUNCH_FILE}.partial"
    partial.write_text(launch_id)
    partial.replace(root / LAUNCH_FILE)  # whole or absent: a node never reads half an id
    return launch_id


def wait_for_launch(root: Path, launch_id: str, timeout_s: float, poll_s: float = 1.0) -> None:
    """Until the head has published ``launch_id`` in ``root``; :class:`LaunchWaitError` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if (root / LAUNCH_FILE).read_text() == launch_id:
                return
        except FileNotFoundError:
            pass
        if time.monotonic() > deadline:
            raise LaunchWaitError(f"no launch {launch_id!r} in {root} after {timeout_s:.0f} s: is the head node's "
                                  f"vf-train rl running with {LAUNCH_ID_ENV}={launch_id} and output_dir {root}?")
        time.sleep(poll_s)


async def wait_healthy(urls: Sequence[str], clients: Sequence[Any], timeout_s: float, poll_s: float = 1.0) -> None:
    """Until every server answers ``GET /health`` (``clients[i]`` is ``urls[i]``'s ``WeightsClient``): servers
    named in ``inference.urls`` may still be starting, as on nodes started with the head."""
    deadline = time.monotonic() + timeout_s
    pending = dict(zip(urls, clients))
    while True:
        answers = await asyncio.gather(*(client.healthy(timeout=5.0) for client in pending.values()))
        pending = {url: client for (url, client), up in zip(pending.items(), answers) if not up}
        if not pending:
            return
        if time.monotonic() > deadline:
            raise InferenceServerError(f"inference.urls not healthy after {timeout_s:.0f} s "
                                       f"(inference.start_timeout_s): {', '.join(pending)}")
        await asyncio.sleep(poll_s)


__all__ = ["LAUNCH_FILE", "LAUNCH_ID_ENV", "LaunchWaitError", "publish_launch", "wait_for_launch", "wait_healthy"]
