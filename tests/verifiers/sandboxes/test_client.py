"""The contract suite: AsyncSandboxClient's calls, their errors and bad input, against real sandboxes on the
local backend and on the Kubernetes backend (executor servers on 127.0.0.1, a fake control path)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from pydantic import ValidationError
from sandbox_fleets import BOTH_TIERS

from verifiers.errors import SandboxError
from verifiers.sandboxes import (
    AsyncSandboxClient,
    CommandTimeoutError,
    CreateSandboxRequest,
    LocalBackendConfig,
    SandboxFileNotFoundError,
    SandboxFileTooLargeError,
    SandboxNotRunningError,
    SandboxPathError,
    SandboxStatus,
    SandboxUnavailableError,
)
from verifiers.sandboxes.local.config import Tier

TIERS = BOTH_TIERS  # every test here runs on the bubblewrap and the gVisor tier
DEFAULTS = LocalBackendConfig()  # what both backends' sandboxes run with in these tests


@pytest.fixture
def client(any_client: AsyncSandboxClient) -> AsyncSandboxClient:
    """Every test here runs on both backends."""
    return any_client


async def test_create_returns_at_once_then_runs_commands(client: AsyncSandboxClient) -> None:
    started = time.perf_counter()
    sandbox = await client.create(CreateSandboxRequest(name="demo"))
    assert time.perf_counter() - started < 1.0
    assert sandbox.status in (SandboxStatus.PENDING, SandboxStatus.RUNNING) and "sbx-" in sandbox.id
    ready = await client.wait_for_creation(sandbox.id)
    assert ready.status is SandboxStatus.RUNNING and ready.name == "demo"
    result = await client.execute_command(sandbox.id, "echo out; echo err >&2; exit 3")
    assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 3)
    assert not (result.timed_out or result.oom_killed or result.truncated)
    await client.delete(sandbox.id)
    assert (await client.get(sandbox.id)).status is SandboxStatus.TERMINATED


async def test_execute_waits_for_readiness_itself(client: AsyncSandboxClient) -> None:
    sandbox = await client.create(CreateSandboxRequest())
    assert (await client.execute_command(sandbox.id, "pwd")).stdout == "/workspace\n"
    await client.delete(sandbox.id)


async def test_environment_working_dir_and_state_between_commands(client: AsyncSandboxClient, make_sandbox) -> None:
    box = await make_sandbox(environment_vars={"GREETING": "hi"}, secrets={"TOKEN": "s3"})
    assert (await client.execute_command(box, "echo $GREETING $TOKEN $HOME")).stdout == "hi s3 /workspace\n"
    assert (await client.execute_command(box, "echo $GREETING", env={"GREETING": "yo"})).stdout == "yo\n"
    await client.execute_command(box, "mkdir -p sub && echo kept > sub/f")
    moved = await client.execute_command(box, "cat f; pwd", working_dir="/workspace/sub")
    assert moved.stdout == "kept\n/workspace/sub\n"
    with pytest.raises(SandboxFileNotFoundError):
        await client.execute_command(box, "true", working_dir="/workspace/missing")


async def test_idempotency_key_returns_the_same_sandbox(client: AsyncSandboxClient) -> None:
    first = await client.create(CreateSandboxRequest(), idempotency_key="retry-1")
    again = await client.create(CreateSandboxRequest(), idempotency_key="retry-1")
    other = await client.create(CreateSandboxRequest(), idempotency_key="retry-2")
    assert first.id == again.id != other.id
    assert len(await client.list()) == 2


async def test_labels_list_and_bulk_delete(client: AsyncSandboxClient) -> None:
    a = await client.create(CreateSandboxRequest(labels=["exp", "a"]))
    b = await client.create(CreateSandboxRequest(labels=["exp", "b"]))
    c = await client.create(CreateSandboxRequest(labels=["other"]))
    assert {s.id for s in await client.list(labels=["exp"])} == {a.id, b.id}
    assert [s.id for s in await client.list(labels=["exp", "a"])] == [a.id]
    assert sorted(await client.bulk_delete(labels=["exp"])) == sorted([a.id, b.id])
    assert [s.id for s in await client.list()] == [c.id]
    assert await client.bulk_delete(sandbox_ids=[c.id]) == [c.id]
    assert await client.list() == []


@pytest.mark.parametrize("kwargs", [{}, {"sandbox_ids": ["x"], "labels": ["y"]}, {"labels": []}])
async def test_bulk_delete_rejects_ambiguous_input(client: AsyncSandboxClient, kwargs: dict) -> None:
    with pytest.raises(ValueError):
        await client.bulk_delete(**kwargs)


async def test_timeout_raises_with_partial_output_or_flags(client: AsyncSandboxClient, make_sandbox) -> None:
    box = await make_sandbox()
    started = time.perf_counter()
    with pytest.raises(CommandTimeoutError) as caught:
        await client.execute_command(box, "echo before; sleep 30", timeout=1)
    assert 0.9 < time.perf_counter() - started < 3
    assert caught.value.response is not None and caught.value.response.stdout == "before\n"
    assert caught.value.response.timed_out and caught.value.response.exit_code == 137
    flagged = await client.execute_command(box, "sleep 30", timeout=0.5, raise_on_timeout=False)
    assert flagged.timed_out and not flagged.oom_killed
    assert (await client.execute_command(box, "echo alive")).stdout == "alive\n"


async def test_long_output_is_cut_and_flagged(client: AsyncSandboxClient, make_sandbox) -> None:
    box = await make_sandbox()
    result = await client.execute_command(box, "head -c 10000000 /dev/zero | tr '\\0' x; echo done >&2")
    assert result.truncated and len(result.stdout) == DEFAULTS.max_output_bytes
    assert result.stderr == "done\n" and result.exit_code == 0


async def test_command_killed_for_memory_is_flagged_and_the_sandbox_survives(client: AsyncSandboxClient,
                                                                             make_sandbox, tier: Tier) -> None:
    box = await make_sandbox(memory_gb=0.125)
    result = await client.execute_command(box, "python3 -c 'b = bytearray(1 << 30); print(len(b))'", timeout=20)
    if tier == "gvisor":  # one process is held to memory_gb by RLIMIT_AS there (docs/sandboxes.md): it fails alone
        assert "MemoryError" in result.stderr and result.exit_code == 1 and not result.timed_out
    else:
        assert result.oom_killed and result.exit_code == 137 and not result.timed_out
    assert (await client.execute_command(box, "echo alive")).stdout == "alive\n"


async def test_files_round_trip_and_errors(client: AsyncSandboxClient, make_sandbox, tmp_path: Path) -> None:
    box = await make_sandbox()
    await client.upload_bytes(box, "/workspace/dir/a.txt", b"alpha")
    await client.upload_bytes(box, "b.txt", b"beta")  # relative: below /workspace
    await client.upload_bytes(box, "/tmp/c.txt", b"gamma")
    # the owner through Python's stat: coreutils' stat fails on the gVisor tier (statx, docs/sandboxes.md)
    owner = "import os, pwd; print(pwd.getpwuid(os.stat('dir/a.txt').st_uid).pw_name)"
    listing = await client.execute_command(box, f"cat dir/a.txt b.txt /tmp/c.txt; python3 -c \"{owner}\"")
    assert listing.stdout == "alphabetagamma" + "sandbox\n"  # uploads belong to the sandbox's user
    local = tmp_path / "in.bin"
    local.write_bytes(bytes(range(256)))
    await client.upload_file(box, "bin/data", local)
    await client.download_file(box, "/workspace/bin/data", tmp_path / "out.bin")
    assert (tmp_path / "out.bin").read_bytes() == bytes(range(256))
    await client.execute_command(box, "printf 'caf\\xc3\\xa9' > text")
    content = await client.read_file(box, "text")
    assert (content.content, content.size) == ("café", 5)
    with pytest.raises(SandboxFileNotFoundError):
        await client.read_file(box, "nope.txt")
    with pytest.raises(SandboxFileNotFoundError):
        await client.read_file(box, "nodir/nope.txt")
    with pytest.raises(SandboxFileTooLargeError):
        await client.read_file(box, "bin/data", max_bytes=100)
    for bad in ("/etc/passwd", "/workspace/../etc/passwd", "/workspace", "a/../../x", "/workspacefoo/x"):
        with pytest.raises(SandboxPathError):
            await client.read_file(box, bad)
    with pytest.raises(SandboxPathError):
        await client.upload_bytes(box, "dir", b"a directory is not a file")


async def test_upload_larger_than_the_disk_is_refused(client: AsyncSandboxClient, make_sandbox) -> None:
    if os.geteuid() != 0:
        pytest.skip("n/a unless root: the size-limited workdir needs root (a tmpfs mount)")
    box = await make_sandbox(disk_size_gb=0.002)  # 2 MiB
    with pytest.raises(SandboxFileTooLargeError):
        await client.upload_bytes(box, "big", b"x" * (4 << 20))
    written = await client.execute_command(box, "head -c 4000000 /dev/zero > big2; echo $?")
    assert written.stdout.strip() != "0" and "No space left" in written.stderr


async def test_unknown_and_deleted_sandboxes(client: AsyncSandboxClient, make_sandbox) -> None:
    with pytest.raises(SandboxNotRunningError, match="does not exist"):
        await client.execute_command("sbx-nope", "true")
    with pytest.raises(SandboxNotRunningError):
        await client.delete("sbx-nope")
    box = await make_sandbox()
    await client.delete(box)
    await client.delete(box)  # idempotent
    with pytest.raises(SandboxNotRunningError, match="deleted"):
        await client.execute_command(box, "true")
    with pytest.raises(SandboxNotRunningError):
        await client.upload_bytes(box, "f", b"")


async def test_delete_during_a_command_answers_with_a_typed_error(client: AsyncSandboxClient, make_sandbox) -> None:
    box = await make_sandbox()
    running = asyncio.create_task(client.execute_command(box, "sleep 60", timeout=60))
    await asyncio.sleep(0.3)
    started = time.perf_counter()
    await client.delete(box)
    with pytest.raises(SandboxNotRunningError):
        await running
    # the delete ends the 60 s command rather than waiting for it; 5 s was missed by 0.26 s on a loaded machine
    # (gVisor tier, two test lanes and a benchmark beside it), so the bound is half the command's length
    assert time.perf_counter() - started < 30


async def test_lifetime_ends_the_sandbox_without_any_call(client: AsyncSandboxClient, make_sandbox) -> None:
    box = await make_sandbox(timeout_minutes=1.5 / 60)
    await asyncio.sleep(2.5)
    assert (await client.get(box)).status is SandboxStatus.TIMEOUT
    with pytest.raises(SandboxNotRunningError):
        await client.execute_command(box, "true")


async def test_idle_timeout_spares_a_sandbox_in_use_and_ends_an_idle_one(any_client: AsyncSandboxClient) -> None:
    box = (await any_client.create(CreateSandboxRequest(idle_timeout_minutes=1.5 / 60))).id
    await any_client.wait_for_creation(box, timeout=30)
    assert (await any_client.get(box)).idle_timeout_minutes == 1.5 / 60
    for _ in range(4):  # a call every 0.5 s keeps it alive past its idle limit
        await asyncio.sleep(0.5)
        await any_client.upload_bytes(box, "f", b"x")
    assert (await any_client.execute_command(box, "sleep 2; echo done")).stdout == "done\n"  # busy is not idle
    await asyncio.sleep(2.5)
    assert (await any_client.get(box)).status is SandboxStatus.TIMEOUT
    with pytest.raises(SandboxNotRunningError):
        await any_client.execute_command(box, "true")


async def test_start_command_runs_in_the_background(client: AsyncSandboxClient, make_sandbox) -> None:
    box = await make_sandbox(start_command="echo started > /tmp/marker; sleep 600")
    for _ in range(50):
        if (await client.execute_command(box, "cat /tmp/marker 2>/dev/null")).stdout == "started\n":
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail("the start command did not run")


async def test_many_sandboxes_and_commands_at_once(client: AsyncSandboxClient) -> None:
    boxes = [await client.create(CreateSandboxRequest(labels=["fleet"])) for _ in range(8)]
    ready = await client.bulk_wait_for_creation([b.id for b in boxes])
    assert all(s.status is SandboxStatus.RUNNING for s in ready)
    calls = [client.execute_command(b.id, f"echo {i}") for i, b in enumerate(boxes) for _ in range(4)]
    results = await asyncio.gather(*calls)
    assert [r.stdout for r in results] == [f"{i}\n" for i in range(8) for _ in range(4)]
    await client.bulk_delete(labels=["fleet"])


@pytest.mark.parametrize("fields", [
    {"cpu_cores": 0}, {"memory_gb": -1}, {"labels": ["bad label"]}, {"labels": ["exp\n"]},
    {"environment_vars": {"1X": "v"}}, {"environment_vars": {"PATH\n": "v"}},
    {"environment_vars": {"A": "nul\0"}}, {"unknown_field": 1}, {"timeout_minutes": 0}, {"max_processes": 1},
    {"idle_timeout_minutes": 0}, {"idle_timeout_minutes": -1}, {"idle_timeout_minutes": 2000},
])
def test_bad_requests_are_refused_before_anything_starts(fields: dict) -> None:
    with pytest.raises(ValidationError):
        CreateSandboxRequest(**fields)


async def test_bad_calls_are_refused(client: AsyncSandboxClient, make_sandbox) -> None:
    with pytest.raises(SandboxUnavailableError, match="GPU"):
        await client.create(CreateSandboxRequest(gpu_count=1))
    box = await make_sandbox()
    with pytest.raises(ValueError):
        await client.execute_command(box, "true", timeout=0)
    with pytest.raises(SandboxError, match="max_command_bytes"):
        await client.execute_command(box, "echo " + "x" * (DEFAULTS.max_command_bytes + 1))
