"""Weights to every inference node through 3 nginx relays vs one plain single-stream download of the same bytes.

Every relay holds each connection to ``--rate-mb`` MB/s (nginx ``limit_rate``), standing in for what one TCP
stream gets across a real network; on loopback nothing else would limit it. In one run, on this machine:

- *single stream*: one client GETs the whole checkpoint as one file from one relay;
- *broadcast, published*: the version is already on the relays; 3 node processes (``Fetcher``, no vLLM: a
  node is done when its folder is assembled and every sha256 checked) start together; the time is until the
  last one is done;
- *broadcast, pipelined*: the trainer's ``Publisher`` and the 3 nodes start together (nodes fetch shards as
  they land); the time is until the last node is done.

::

    .venv/bin/python bench/weight_broadcast.py                     # 64 MB, 4 MB shards, 10 MB/s per stream
    .venv/bin/python bench/weight_broadcast.py --mb 16 --rate-mb 4  # a quick run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainer_adapter.broadcast.fetcher import Fetcher  # noqa: E402
from trainer_adapter.broadcast.manifest import build_manifest, sign_manifest, verify_manifest  # noqa: E402
from trainer_adapter.broadcast.publisher import Publisher  # noqa: E402
from trainer_adapter.broadcast.relay import NginxRelay, RelayConfig  # noqa: E402
from trainer_adapter.broadcast.relay_choice import RelayChoice  # noqa: E402
from trainer_adapter.inference.run_secret import ensure_run_secret  # noqa: E402

NODES = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _node(relays: list[str], dest: Path, step: int, concurrency: int) -> None:
    # Real nodes run beside their vLLM server all along: import time is not part of a broadcast.
    print(json.dumps({"ready": True}), flush=True)
    sys.stdin.readline()
    started = time.monotonic()
    async with Fetcher(relays, dest, concurrency=concurrency, poll_interval=0.05,
                       choice=RelayChoice(relays, explore=0.1)) as fetcher:  # fmt: skip
        await fetcher.fetch(step)
    # The wall clock, shared with the bench process: a node is done here, not when its interpreter has exited.
    print(json.dumps({"seconds": time.monotonic() - started, "done_at": time.time()}), flush=True)


def _start_nodes(relays: list[str], work: Path, step: int, concurrency: int) -> list[subprocess.Popen[str]]:
    command = [sys.executable, __file__, "node", "--step", str(step), "--concurrency", str(concurrency)]
    nodes = [subprocess.Popen([*command, "--dest", str(work / f"node{i}_{step}"), *relays], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for i in range(NODES)]  # fmt: skip
    for node in nodes:
        assert node.stdout is not None
        node.stdout.readline()  # {"ready": true}
    return nodes


def _go(nodes: list[subprocess.Popen[str]]) -> None:
    for node in nodes:
        assert node.stdin is not None
        node.stdin.write("go\n")
        node.stdin.flush()


def _wait_nodes(nodes: list[subprocess.Popen[str]]) -> tuple[list[float], float]:
    """Each node's own fetch time, and the moment (``time.time()``) the last one was done."""
    seconds, done = [], []
    for node in nodes:
        assert node.stdout is not None
        out = node.stdout.read()
        node.wait(timeout=600)
        if node.returncode != 0:
            raise SystemExit(f"a node failed (exit {node.returncode})")
        report = json.loads(out.strip().splitlines()[-1])
        seconds.append(report["seconds"])
        done.append(report["done_at"])
    return seconds, max(done)


def _auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {ensure_run_secret()}"}  # the relays answer only the run secret


def _single_stream(url: str, dest: Path) -> float:
    started = time.monotonic()
    with httpx.stream("GET", url, timeout=600, headers=_auth()) as response, dest.open("wb") as fh:
        response.raise_for_status()
        for chunk in response.iter_bytes(2**20):
            fh.write(chunk)
    return time.monotonic() - started


async def _publish(relays: list[str], ckpt: Path, step: int, shard: int) -> float:
    started = time.monotonic()
    async with Publisher(relays, keep=3, shard_size=shard) as publisher:
        await publisher.publish(ckpt, step)
    return time.monotonic() - started


def _signing_ms(ckpt: Path, shard: int) -> float:
    """Signing a version's manifest and verifying it, in milliseconds (median of 20): what the run secret's
    protection adds to a publish and a fetch (the relays' bearer check is one nginx map lookup a request)."""
    manifest = build_manifest(ckpt, 1, shard)
    secret = ensure_run_secret()
    times = []
    for _ in range(20):
        started = time.perf_counter()
        verify_manifest(sign_manifest(manifest, secret), secret)
        times.append((time.perf_counter() - started) * 1000)
    return sorted(times)[len(times) // 2]


def run(args: argparse.Namespace) -> dict[str, float]:
    ensure_run_secret()  # the relays and the nodes (child processes) share it
    work = Path(tempfile.mkdtemp(prefix="weight-broadcast-"))
    ckpt = work / "ckpt"
    ckpt.mkdir()
    (ckpt / "model.safetensors").write_bytes(random.Random(0).randbytes(args.mb * 2**20))
    (ckpt / "config.json").write_text("{}")
    settings = RelayConfig(port=1, rate_limit_bytes=int(args.rate_mb * 2**20), max_conns_per_client=256)
    relays = [NginxRelay(settings.model_copy(update={"port": _free_port()}), work / f"relay{i}") for i in range(3)]
    try:
        for relay in relays:
            relay.start()
        urls = [r.url for r in relays]
        httpx.put(urls[0] + "whole.bin", content=(ckpt / "model.safetensors").read_bytes(), timeout=600,
                  headers=_auth())
        single = _single_stream(urls[0] + "whole.bin", work / "single.bin")
        publish = asyncio.run(_publish(urls, ckpt, 1, args.shard_mb * 2**20))
        nodes = _start_nodes(urls, work, 1, args.concurrency)
        started = time.time()
        _go(nodes)
        per_node, last = _wait_nodes(nodes)
        published = last - started
        nodes = _start_nodes(urls, work, 2, args.concurrency)
        started = time.time()
        _go(nodes)
        asyncio.run(_publish(urls, ckpt, 2, args.shard_mb * 2**20))
        pipelined = _wait_nodes(nodes)[1] - started
        signing = _signing_ms(ckpt, args.shard_mb * 2**20)
    finally:
        for relay in relays:
            relay.stop()
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return {"mb": args.mb, "single_stream_s": single, "publish_s": publish, "broadcast_published_s": published,
            "slowest_node_fetch_s": max(per_node), "broadcast_pipelined_s": pipelined,
            "manifest_sign_and_verify_ms": signing}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command")
    node = sub.add_parser("node", help="one fetcher process (the bench starts these itself)")
    node.add_argument("relays", nargs="+")
    node.add_argument("--dest", type=Path, required=True)
    node.add_argument("--step", type=int, required=True)
    node.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--mb", type=int, default=64, help="checkpoint size in MiB")
    parser.add_argument("--shard-mb", type=int, default=4, help="shard size in MiB")
    parser.add_argument("--rate-mb", type=float, default=10.0, help="per-connection rate limit of every relay, MiB/s")
    parser.add_argument("--concurrency", type=int, default=4, help="shards each node fetches at once")
    args = parser.parse_args()
    if args.command == "node":
        asyncio.run(_node(args.relays, args.dest, args.step, args.concurrency))
        return
    figures = run(args)
    print(json.dumps({k: round(v, 2) for k, v in figures.items()}, indent=2))


if __name__ == "__main__":
    main()
