"""Sandbox benchmark: the local backend against a bare subprocess, in the same run.

Figures: command latency (p50/p99) and throughput at 1 and 32 in flight, for a
command run in a sandbox (through its agent) and the same command run as a
plain ``bash -c`` subprocess of this process; create-to-ready latency, cold and
from a warm pool; and how many idle sandboxes this machine holds (start time,
memory, every one answering); and the isolation tiers side by side (``--tiers``: bubblewrap and
gVisor by default), each tier's create-to-ready and exec latency in the same run::

    .venv/bin/python bench/sandbox.py                     # everything, 256 live sandboxes
    .venv/bin/python bench/sandbox.py --quick             # a smoke run, a few seconds
    .venv/bin/python bench/sandbox.py --only exec --repeats 7 --json sandbox.json
    .venv/bin/python bench/sandbox.py --only tiers         # bubblewrap beside gVisor, under a minute

The exec figures are the medians over ``--repeats`` rounds; in each round the
sandbox and the bare runs go back to back (alternating which goes first), and
the ratio is taken within the round, so load from other work on the machine
hits both sides alike.

Needs bubblewrap (``bash scripts/setup_sandbox.sh``); run as root for the full isolation (and for gVisor).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from verifiers.sandboxes import AsyncSandboxClient, CreateSandboxRequest, LocalBackend, LocalBackendConfig
from verifiers.sandboxes.local.config import Tier

TIERS: tuple[Tier, ...] = ("bubblewrap", "gvisor")


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


async def bench_exec(client: AsyncSandboxClient, command: str, total: int, in_flight: int,
                     bare_first: bool = False) -> dict[str, Any]:
    """The same command, ``total`` times with ``in_flight`` at once: one sandbox per slot vs bare subprocesses."""
    boxes = [(await client.create(CreateSandboxRequest(labels=["bench"]))).id for _ in range(in_flight)]
    await client.bulk_wait_for_creation(boxes)
    for box in boxes:  # warm each agent once
        await _in_sandbox(client, box, command)
    if bare_first:
        bare = await _load(lambda i: _bare(command), total, in_flight)
    sandbox = await _load(lambda i: _in_sandbox(client, boxes[i % in_flight], command), total, in_flight)
    if not bare_first:
        bare = await _load(lambda i: _bare(command), total, in_flight)
    await client.bulk_delete(labels=["bench"])
    return {"command": command, "in_flight": in_flight, "sandbox": sandbox, "bare": bare,
            "p50_ratio": sandbox["p50_ms"] / bare["p50_ms"]}


def _median_row(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One exec row from several rounds: the median of every figure, and the spread of the ratio."""
    row: dict[str, Any] = {"command": rounds[0]["command"], "in_flight": rounds[0]["in_flight"], "rounds": len(rounds)}
    for side in ("sandbox", "bare"):
        row[side] = {key: statistics.median(r[side][key] for r in rounds) for key in rounds[0][side]}
    ratios = [r["p50_ratio"] for r in rounds]
    row.update(p50_ratio=statistics.median(ratios), p50_ratio_min=min(ratios), p50_ratio_max=max(ratios))
    return row


async def bench_create(root: Path, count: int, pool: int) -> dict[str, float]:
    """create → ready, one at a time; with a pool, each create waits until the pool has refilled."""
    backend = LocalBackend(LocalBackendConfig(root_dir=root, warm_pool_size=pool))  # one at a time: weight moot
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


async def bench_tier(root: Path, tier: Tier, creates: int, execs: int) -> dict[str, Any]:
    """One tier's create → ready (one at a time) and exec latency of ``true`` (one in flight)."""
    backend = LocalBackend(LocalBackendConfig(root_dir=root, tier=tier))
    client = AsyncSandboxClient(backend)
    try:
        caps = await backend.start()
        created = []
        for _ in range(creates):
            started = time.perf_counter()
            box = await client.create(CreateSandboxRequest(labels=["tier"]))
            await client.wait_for_creation(box.id, timeout=60)
            created.append(time.perf_counter() - started)
        await _in_sandbox(client, box.id, "true")  # warm the agent once
        started = time.perf_counter()
        latencies = [await _in_sandbox(client, box.id, "true") for _ in range(execs)]
        exec_summary = _summary(latencies, time.perf_counter() - started)
        await client.bulk_delete(labels=["tier"])
    finally:
        await backend.close()
    return {"isolation": caps.summary(), "create": _summary(created, sum(created)), "exec_true": exec_summary}


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
    print(f"\nhost: {report['host']}\nisolation: {report['isolation']}, cpu_weight={report['cpu_weight']}\n"
          f"placement: {report['placement']}\n")
    if report["exec"]:
        print(f"{'exec (medians)':<26}{'sandbox p50/p99 ms':>22}{'bare p50/p99 ms':>20}{'sandbox/s':>11}{'bare/s':>9}"
              f"{'p50 x':>7}{'(min-max, rounds)':>20}")
    for row in report["exec"]:
        s, b = row["sandbox"], row["bare"]
        label = f"{row['command'][:18]} @{row['in_flight']}"
        spread = f"{row['p50_ratio_min']:.2f}-{row['p50_ratio_max']:.2f}, {row['rounds']}"
        print(f"{label:<26}{s['p50_ms']:>11.1f} /{s['p99_ms']:>8.1f}{b['p50_ms']:>10.1f} /{b['p99_ms']:>7.1f}"
              f"{s['per_s']:>11.0f}{b['per_s']:>9.0f}{row['p50_ratio']:>7.2f}{spread:>20}")
    for name, row in report["create"].items():
        print(f"create → ready ({name}): p50 {row['p50_ms']:.1f} ms, p99 {row['p99_ms']:.1f} ms (n={row['n']})")
    for tier, row in report.get("tiers", {}).items():
        print(f"tier {tier:<11} create → ready p50 {row['create']['p50_ms']:7.1f} ms (n={row['create']['n']}), "
              f"exec `true` p50 {row['exec_true']['p50_ms']:6.1f} ms, p99 {row['exec_true']['p99_ms']:6.1f} ms "
              f"(n={row['exec_true']['n']})")
    live = report.get("live")
    if live:
        print(f"live: {live['sandboxes']} sandboxes ready in {live['all_ready_s']:.1f} s, "
              f"{live['memory_mb_each']:.1f} MB each, all answered, deleted in {live['delete_all_s']:.1f} s")


def _cpu_cgroup_dir() -> Path | None:
    """This process's cgroup v1 ``cpu`` directory, if there is one."""
    own = next((line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
                if "cpu" in line.split(":", 2)[1].split(",")), None)
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, mount_point, kind, options, *_ = line.split()
        if own is not None and kind == "cgroup" and "cpu" in options.split(","):
            return Path(mount_point) / own.lstrip("/")
    return None


@contextlib.contextmanager
def own_cpu_group(enabled: bool) -> Iterator[str]:
    """Run in a CPU cgroup of our own, so other work on the machine weighs on both sides alike.

    The sandboxes nest below this process's cgroup and the bare subprocesses
    inherit it, so in a group of their own both compete with the rest of the
    machine as one. Left in the root group, the kernel's autogroup would give
    every bare subprocess together one session's share against other sessions,
    while the sandboxes' cgroups compete on their own terms.
    """
    home = _cpu_cgroup_dir() if enabled and os.geteuid() == 0 else None
    if home is None:
        yield "the benchmark shares the machine's CPU as it is (no cgroup v1 cpu group of its own)"
        return
    group = home / f"vf-sandbox-bench-{os.getpid()}"
    group.mkdir()
    (group / "cgroup.procs").write_text(str(os.getpid()))
    try:
        yield f"the benchmark and its sandboxes in their own cpu cgroup ({group})"
    finally:
        (home / "cgroup.procs").write_text(str(os.getpid()))
        for leftover in sorted(group.iterdir()):  # sandbox parents the backends left (they remove them when empty)
            if leftover.is_dir():
                leftover.rmdir()
        group.rmdir()


async def main(args: argparse.Namespace) -> dict[str, Any]:
    with own_cpu_group(args.own_cgroup) as placement:
        report = await _run(args)
    report["placement"] = placement
    return report


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(args.root)
    backend = LocalBackend(LocalBackendConfig(root_dir=root, cpu_weight=args.cpu_weight))
    client = AsyncSandboxClient(backend)
    caps = await backend.start()
    scale = 4 if args.quick else 1
    report: dict[str, Any] = {"host": f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} at start",
                              "isolation": caps.summary(), "cpu_weight": args.cpu_weight, "exec": [], "create": {}}
    try:
        if args.only in (None, "exec"):
            for command in ("echo 1", "python3 -c pass"):
                for in_flight, total in ((1, 200), (32, 512)):
                    rounds = [await bench_exec(client, command, total // scale, in_flight, bare_first=bool(r % 2))
                              for r in range(args.repeats)]
                    report["exec"].append(_median_row(rounds))
        if args.only in (None, "create"):
            report["create"]["cold"] = await bench_create(root, 40 // scale, pool=0)
            report["create"]["warm pool"] = await bench_create(root, 40 // scale, pool=4)
        if args.only in (None, "tiers"):
            report["tiers"] = {tier: await bench_tier(root / tier, tier, 12 // scale, 200 // scale)
                               for tier in args.tiers}
        if args.live and args.only in (None, "live"):
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
    parser.add_argument("--repeats", type=int, default=3, help="rounds of each exec comparison (medians reported)")
    parser.add_argument("--only", choices=("exec", "create", "live", "tiers"), help="run one part only")
    parser.add_argument("--tiers", type=lambda text: text.split(","), default=list(TIERS),
                        help="comma-separated isolation tiers to compare (default: bubblewrap,gvisor)")
    parser.add_argument("--cpu-weight", choices=("per_sandbox", "shared"), default="per_sandbox",
                        help="LocalBackendConfig.cpu_weight of the sandboxes measured")
    parser.add_argument("--no-own-cgroup", dest="own_cgroup", action="store_false",
                        help="stay in this process's cgroup (see own_cpu_group: other load then skews the ratios)")
    parser.add_argument("--root", default=f"/var/tmp/vf-sandbox-bench-{os.getpid()}", help="sandbox root")
    parser.add_argument("--json", help="also write the figures to this file")
    options = parser.parse_args()
    if options.repeats < 1:
        parser.error("--repeats must be at least 1")
    if not options.tiers or set(options.tiers) - set(TIERS):
        parser.error(f"--tiers takes a comma-separated list of {', '.join(TIERS)}, got {','.join(options.tiers)}")
    result = asyncio.run(main(options))
    _print(result)
    if options.json:
        Path(options.json).write_text(json.dumps(result, indent=2))
