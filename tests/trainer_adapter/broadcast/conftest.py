"""Three real nginx relays on 127.0.0.1 (each test gets fresh ones), and checkpoints of random bytes."""

from __future__ import annotations

import os
import random
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from trainer_adapter.broadcast.relay import NGINX_SETUP, NginxRelay, RelayConfig, nginx_binary


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def need_nginx() -> None:
    # Under CI=true the suite's conftest turns this skip into a failure naming the setup script.
    if nginx_binary() is None:
        pytest.skip(f"needs nginx: {NGINX_SETUP}")


@pytest.fixture
def start_relays(tmp_path: Path) -> Iterator[Callable[..., list[NginxRelay]]]:
    """Starts n relays with the given settings; all are stopped after the test."""
    need_nginx()
    started: list[NginxRelay] = []

    def start(n: int = 3, **settings: int | bool) -> list[NginxRelay]:
        for _ in range(n):
            relay = NginxRelay(RelayConfig(port=free_port(), **settings), tmp_path / f"relay{len(started)}")
            relay.start()
            started.append(relay)
        return started[-n:]

    yield start
    for relay in started:
        relay.stop()


@pytest.fixture
def relays(start_relays: Callable[..., list[NginxRelay]]) -> list[NginxRelay]:
    return start_relays(3)


def make_checkpoint(folder: Path, seed: int, sizes: dict[str, int]) -> Path:
    """A folder of files of random bytes (what the fetcher moves does not depend on what they hold)."""
    folder.mkdir(parents=True)
    rng = random.Random(seed)
    for name, size in sizes.items():
        (folder / name).write_bytes(rng.randbytes(size))
    return folder


def same_files(a: Path, b: Path) -> bool:
    names = sorted(os.listdir(a))
    return names == sorted(os.listdir(b)) and all((a / n).read_bytes() == (b / n).read_bytes() for n in names)
