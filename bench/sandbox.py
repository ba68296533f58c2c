"""Sandbox benchmark: the local backend against a bare subprocess, in the same run.

Figures: command latency (p50/p99) and throughput at 1 and 32 in flight, for a
command run in a sandbox (through its agent) and the same command run as a
plain ``bash -c`` subprocess of this process; create-to-ready latency, cold and
from a warm pool; and how many idle sandboxes this machine holds (start time,
memory, every one answering)::

    .venv/bin/python bench/sandbox.py                     # everything, 256 live sandboxes
    .venv/bin/python bench/sandbox.py --quick             # a smoke run, a few seconds
    .venv/bin/python bench/sandbox.py --live 512 --json sandbox.json

Needs bubblewrap (``bash scripts/setup_sandbox.sh``); run as root for the full isolation.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from verifiers.sandboxes import AsyncSandboxClient, CreateSandboxRequest, LocalBackend, LocalBackendConfig


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _summary(latencies: list[float], wall: float) -> dict[str, float]:
    return {"p50_ms": 1000 * statistics.median(latencies), "p99_ms": 1000 * _percentile(latencies, 0.99),
            "per_s": len(latencies) / wall, "n": len(latencies)}


async def _bare(command: str) -> float:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec("/bin/bash", "-c", command, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE, env={"PATH": "/usr/bin:/bin"})
    await process.communicate()
    return time.perf_counter() - started


async def _in_sandbox(client: AsyncSandboxClient, box: str, command: str) -> float:
    started = time.perf_counter()
    result = await client.execute_command(box, command, timeout=60)
    assert result.exit_code == 0, result
    return time.perf_counter() - started


async def _load(run_one, total: int, in_flight: int) -> dict[str, float]:
    gate = asyncio.Semaphore(in_flight)

    async def one(i: int) -> float:
        async with gate:
            return await run_one(i)

    started = time.perf_counter()
    latencies = await asyncio.gather(*(one(i) for i in range(total)))
    return _summary(list(latencies), time.perf_counter() - started)


async def bench_exec(client: AsyncSandboxClient, command: str, total: int, in_flight: int) -> dict[str, Any]:
    """The same command, ``total`` times with ``in_flight`` at once: one sandbox per slot vs bare subprocesses."""
    boxes = [(await client.create(CreateSandboxRequest(labels=["bench"]))).id for _ in range(in_flight)]
    await client.bulk_wait_for_creation(boxes)
    for box in boxes:  # warm each agent once
        await _in_sandbox(client, box, command)
    sandbox = await _load(lambda i: _in_sandbox(client, boxes[i % in_flight], command), total, in_flight)
    bare = await _load(lambda i: _bare(command), total, in_flight)
    await client.bulk_delete(labels=["bench"])
    return {"command": command, "in_flight": in_flight, "sandbox": sandbox, "bare": bare,
            "p50_ratio": sandbox["p50_ms"] / bare["p50_ms"]}


async def bench_create(root: Path, count: int, pool: int) -> dict[str, float]:
    """create → ready, one at a time; with a pool, each create waits until the pool has refilled."""
    backend = LocalBackend(LocalBackendConfig(root_dir=root, warm_pool_size=pool))
    client = AsyncSandboxClient(backend)
    latencies = []
    try:
        if pool:
            await client.delete((await client.create(CreateSandboxRequest())).id)  # opens the pool
        for _ in range(count):
            while pool and backend.warm < pool:
                await asyncio.sleep(0.01)
            started = time.perf_counter()
            box = await client.create(CreateSandboxRequest())
            await client.wait_for_creation(box.id)
            latencies.append(time.perf_counter() - started)
            await client.delete(box.id)
    finally:
        await backend.close()
    return _summary(latencies, sum(latencies))


def _available_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


async def bench_live(client: AsyncSandboxClient, count: int) -> dict[str, float]:
    """Start ``count`` idle sandboxes, check every one answers, then delete them all."""
    before = _available_bytes()
    started = time.perf_counter()
    boxes = [(await client.create(CreateSandboxRequest(labels=["live"], memory_gb=0.25))).id for _ in range(count)]
    await client.bulk_wait_for_creation(boxes, timeout=600)
    ready_s = time.perf_counter() - started
    held = before - _available_bytes()
    answers = await asyncio.gather(*(client.execute_command(b, "echo ok") for b in boxes))
    assert all(a.stdout == "ok\n" for a in answers)
    started = time.perf_counter()
    await client.bulk_delete(labels=["live"])
    return {"sandboxes": count, "all_ready_s": ready_s, "memory_mb_each": held / count / 2**20,
            "delete_all_s": time.perf_counter() - started}


def _print(report: dict[str, Any]) -> None:
    print(f"\nhost: {report['host']}\nisolation: {report['isolation']}\n")
    print(f"{'exec':<34}{'sandbox p50/p99 ms':>22}{'bare p50/p99 ms':>20}{'sandbox/s':>11}{'bare/s':>9}{'p50 x':>7}")
    for row in report["exec"]:
        s, b = row["sandbox"], row["bare"]
        label = f"{row['command'][:22]} @{row['in_flight']}"
        print(f"{label:<34}{s['p50_ms']:>11.1f} /{s['p99_ms']:>8.1f}{b['p50_ms']:>10.1f} /{b['p99_ms']:>7.1f}"
              f"{s['per_s']:>11.0f}{b['per_s']:>9.0f}{row['p50_ratio']:>7.2f}")
    for name, row in report["create"].items():
        print(f"create → ready ({name}): p50 {row['p50_ms']:.1f} ms, p99 {row['p99_ms']:.1f} ms (n={row['n']})")
    live = report.get("live")
    if live:
        print(f"live: {live['sandboxes']} sandboxes ready in {live['all_ready_s']:.1f} s, "
              f"{live['memory_mb_each']:.1f} MB each, all answered, deleted in {live['delete_all_s']:.1f} s")


async def main(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(args.root)
    backend = LocalBackend(LocalBackendConfig(root_dir=root))
    client = AsyncSandboxClient(backend)
    caps = await backend.start()
    scale = 4 if args.quick else 1
    report: dict[str, Any] = {"host": f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} at start",
                              "isolation": caps.summary(), "exec": [], "create": {}}
    try:
        for command in ("echo 1", "python3 -c pass"):
            report["exec"].append(await bench_exec(client, command, 200 // scale, 1))
            report["exec"].append(await bench_exec(client, command, 512 // scale, 32))
        report["create"]["cold"] = await bench_create(root, 40 // scale, pool=0)
        report["create"]["warm pool"] = await bench_create(root, 40 // scale, pool=4)
        if args.live:
            report["live"] = await bench_live(client, 16 if args.quick else args.live)
    finally:
        await backend.close()
        shutil.rmtree(root, ignore_errors=True)
    report["host"] += f", {os.getloadavg()[0]:.2f} at end"
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the runs and 16 live sandboxes")
    parser.add_argument("--live", type=int, default=256, help="idle sandboxes to hold at once (0: skip)")
    parser.add_argument("--root", default=f"/var/tmp/vf-sandbox-bench-{os.getpid()}", help="sandbox root")
    parser.add_argument("--json", help="also write the figures to this file")
    options = parser.parse_args()
    result = asyncio.run(main(options))
    _print(result)
    if options.json:
        Path(options.json).write_text(json.dumps(result, indent=2))
