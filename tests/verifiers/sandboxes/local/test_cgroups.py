"""Cgroup drivers: the limits each writes (on a stand-in tree for v2, which this machine lacks) and real v1."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from verifiers.sandboxes.local.cgroup_detect import detect
from verifiers.sandboxes.local.cgroups import Limits, V1Driver, V2Driver

LIMITS = Limits(memory_bytes=256 << 20, max_processes=64, cpu_cores=0.5)


def test_v2_writes_every_limit_and_kills_through_cgroup_kill(tmp_path: Path) -> None:
    parent = tmp_path / "parent"
    parent.mkdir()
    driver = V2Driver(parent, ("memory", "pids", "cpu"))
    group = driver.create("s1", LIMITS)
    path = parent / "s1"
    (path / "cgroup.procs").write_text("")  # a kernel would create these; the stand-in has to
    (path / "cgroup.kill").write_text("")
    (path / "memory.events").write_text("low 0\noom 1\noom_kill 3\n")
    assert (path / "memory.max").read_text() == str(256 << 20)
    assert (path / "pids.max").read_text() == "64" and (path / "cpu.max").read_text() == "50000 100000"
    assert group.procs_files == [path / "cgroup.procs"] and group.oom_kills() == 3
    assert group.kill() and (path / "cgroup.kill").read_text() == "1"
    assert driver.names() == ["s1"]


def test_v1_on_this_machine_limits_and_empties_a_real_cgroup() -> None:
    driver = detect("verifiers-sandboxes-cgroup-test")
    if driver is None or not isinstance(driver, V1Driver):
        pytest.skip("n/a without writable cgroup v1 controllers (root on the project's machine)")
    group = driver.create("s-test", LIMITS)
    try:
        assert (driver.parents["memory"] / "s-test" / "memory.limit_in_bytes").read_text().strip() == str(256 << 20)
        assert (driver.parents["pids"] / "s-test" / "pids.max").read_text().strip() == "64"
        procs = " ".join(str(p) for p in group.procs_files)
        sleeper = subprocess.Popen(["/bin/sh", "-c", f'for f in {procs}; do echo $$ > "$f"; done; exec sleep 60'])
        members = driver.parents["pids"] / "s-test" / "cgroup.procs"
        deadline = time.monotonic() + 5
        while str(sleeper.pid) not in members.read_text().split() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert str(sleeper.pid) in members.read_text().split()
        assert group.kill() and sleeper.wait(timeout=5) == -9
    finally:
        group.remove()
        driver.remove_parent()
    assert not (driver.parents["pids"] / "s-test").exists() and driver.names() == []


def test_v2_parent_weighs_one_process_per_sandbox_unless_shared(tmp_path: Path) -> None:
    parent = tmp_path / "parent"
    parent.mkdir()
    driver = V2Driver(parent, ("memory", "pids", "cpu"))
    driver.create("s1", LIMITS)
    assert (parent / "cpu.weight").read_text() == "100"
    for n in range(2, 4):
        driver.create(f"s{n}", LIMITS)
    assert (parent / "cpu.weight").read_text() == "300"
    for n in range(4, 120):
        (parent / f"s{n}").mkdir()
    driver.balance()
    assert (parent / "cpu.weight").read_text() == "10000"  # the kernel's largest weight
    shared = tmp_path / "shared"
    shared.mkdir()
    driver = V2Driver(shared, ("memory", "pids", "cpu"))
    driver.weight_per_sandbox = False
    driver.create("s1", LIMITS)
    driver.create("s2", LIMITS)
    assert not (shared / "cpu.weight").exists()


def test_v1_parent_shares_follow_the_live_sandboxes() -> None:
    driver = detect("verifiers-sandboxes-cgroup-weight-test")
    if driver is None or not isinstance(driver, V1Driver) or "cpu" not in driver.parents:
        pytest.skip("n/a without a writable cgroup v1 cpu controller (root on the project's machine)")
    shares = driver.parents["cpu"] / "cpu.shares"
    groups = []
    try:
        groups.append(driver.create("s-a", LIMITS))
        assert shares.read_text().strip() == "1024"
        groups.append(driver.create("s-b", LIMITS))
        assert shares.read_text().strip() == "2048"
        groups.pop().remove()
        driver.balance()
        assert shares.read_text().strip() == "1024"
    finally:
        for group in groups:
            group.remove()
        driver.remove_parent()
