"""The capability probe: what it finds here, what it says, and how it refuses."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from verifiers.sandboxes import (
    AsyncSandboxClient,
    CreateSandboxRequest,
    LocalBackend,
    LocalBackendConfig,
    SandboxUnavailableError,
)
from verifiers.sandboxes.local import probe as probe_module
from verifiers.sandboxes.local.launcher import LaunchPlan, bwrap_args, launcher_args
from verifiers.sandboxes.local.seccomp import build_filter


@pytest.fixture
def agent_file(sandbox_root: Path) -> Path:
    sandbox_root.mkdir(parents=True, exist_ok=True)
    return LocalBackend._install_agent(sandbox_root)


def test_this_machine_gets_full_isolation_and_says_so(sandbox_root: Path, agent_file: Path,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="verifiers.sandboxes"):
        caps = probe_module.probe(LocalBackendConfig(root_dir=sandbox_root), agent_file)
    assert caps.mode == "bwrap" and "bubblewrap" in caps.summary()
    assert any("local sandboxes: bubblewrap" in r.message for r in caplog.records)
    if os.geteuid() == 0:  # the machine the project targets: everything on
        assert caps.per_sandbox_uid and caps.tmpfs and caps.cgroups is not None and caps.seccomp_filter
        assert caps.disk == Path("/dev/loop-control").exists() and "ext4 image disk" in caps.summary()
        assert caps.gaps == []


def test_features_turned_off_are_reported_as_gaps(sandbox_root: Path, agent_file: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="verifiers.sandboxes"):
        caps = probe_module.probe(LocalBackendConfig(root_dir=sandbox_root, cgroups=False, seccomp=False), agent_file)
    assert caps.cgroups is None and caps.seccomp_filter is None
    assert any("no writable cgroups" in g for g in caps.gaps) and any("seccomp" in g for g in caps.gaps)
    assert sum("local sandboxes:" in r.message for r in caplog.records) == len(caps.gaps)


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/dev/shm").is_dir(), reason="needs root and /dev/shm")
def test_a_root_in_memory_gets_no_disk_images_and_says_why(agent_file: Path,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    # An image file on a tmpfs would be charged to memory again, so the probe falls back to a tmpfs
    root = Path("/dev/shm") / f"vf-sbx-probe-{os.getpid()}"
    root.mkdir(mode=0o711)
    try:
        with caplog.at_level(logging.WARNING, logger="verifiers.sandboxes"):
            caps = probe_module.probe(LocalBackendConfig(root_dir=root), agent_file)
        assert not caps.disk and caps.tmpfs and "tmpfs workdir" in caps.summary()
        assert any("no loop-mounted disk image" in g and "out-of-memory" in g for g in caps.gaps)
        assert any("no loop-mounted disk image" in r.message for r in caplog.records)
        assert [p.name for p in root.iterdir()] == []  # the probe's own image and mount point are gone
    finally:
        root.rmdir()


def test_no_isolation_must_be_asked_for_and_is_logged_loudly(sandbox_root: Path, agent_file: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="verifiers.sandboxes"):
        caps = probe_module.probe(LocalBackendConfig(root_dir=sandbox_root, isolation="none"), agent_file)
    assert caps.mode == "none" and "NO ISOLATION" in caps.summary()
    assert any(r.levelno == logging.ERROR and "WITHOUT ISOLATION" in r.message for r in caplog.records)


def test_missing_bubblewrap_refuses_with_the_fix(sandbox_root: Path, agent_file: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_module.shutil, "which", lambda name: None)
    with pytest.raises(SandboxUnavailableError, match=r"setup_sandbox\.sh"):
        probe_module.probe(LocalBackendConfig(root_dir=sandbox_root), agent_file)


def test_a_missing_agent_python_is_refused(sandbox_root: Path, agent_file: Path) -> None:
    with pytest.raises(SandboxUnavailableError, match="does not exist"):
        probe_module.probe(LocalBackendConfig(root_dir=sandbox_root, python="/nope/python3"), agent_file)


async def test_a_root_dir_other_uids_cannot_reach_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("n/a unless root: only root switches to per-sandbox uids")
    hidden = tmp_path / "private"
    hidden.mkdir(mode=0o700)
    backend = LocalBackend(LocalBackendConfig(root_dir=hidden / "root"))
    with pytest.raises(SandboxUnavailableError, match="not searchable"):
        await backend.start()


def test_bad_config_values_are_refused() -> None:
    with pytest.raises(ValueError):
        LocalBackendConfig(isolation="docker")
    with pytest.raises(ValueError):
        LocalBackendConfig(unknown=1)
    with pytest.raises(ValueError):
        LocalBackendConfig(max_output_bytes=10)


def test_the_command_line_keeps_every_protection(tmp_path: Path) -> None:
    plan = LaunchPlan(bwrap="bwrap", python="/usr/bin/python3", agent_file=tmp_path / "a.py", files_dir=tmp_path,
                      etc_dir=tmp_path, host_uid=1234, setpriv="/usr/bin/setpriv",
                      seccomp_fd=5, cgroup_procs=[tmp_path / "cgroup.procs"])
    args = bwrap_args(plan, ["cmd"])
    for flag in ("--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
                 "--clearenv", "--remount-ro"):
        assert flag in args
    assert args[args.index("--cap-drop") + 1] == "ALL" and args[args.index("--seccomp") + 1] == "5"
    assert "--share-net" not in args and args[-2:] == ["--", "cmd"]
    plan.network = True
    assert "--share-net" in bwrap_args(plan, ["cmd"])
    full = launcher_args(plan, ["cmd"])
    assert full[:2] == ["/bin/sh", "-c"] and "cgroup.procs" in full[2]
    assert full[4:8] == ["/usr/bin/setpriv", "--reuid", "1234", "--regid"]


def test_the_seccomp_filter_is_well_formed() -> None:
    program = build_filter("x86_64")
    assert program is not None and len(program) % 8 == 0 and len(program) // 8 < 256
    assert build_filter("riscv64") is None


async def test_the_unisolated_mode_still_runs_commands_in_the_sandbox_directories(sandbox_root: Path) -> None:
    backend = LocalBackend(LocalBackendConfig(root_dir=sandbox_root / "none", isolation="none"))
    client = AsyncSandboxClient(backend)
    try:
        box = (await client.create(CreateSandboxRequest(environment_vars={"GREETING": "hi"}))).id
        await client.upload_bytes(box, "/workspace/f.txt", b"data")
        result = await client.execute_command(box, "cat f.txt; echo \" $GREETING\"; pwd")
        workspace = result.stdout.split()[-1]
        assert result.stdout.startswith("data hi\n") and workspace.endswith("/files/workspace")
        assert (await client.execute_command(box, "pwd", working_dir="/workspace")).stdout.strip() == workspace
        timed = await client.execute_command(box, "sleep 30", timeout=0.5, raise_on_timeout=False)
        assert timed.timed_out
    finally:
        await backend.close()


def test_each_root_gets_its_own_uid_range_unless_one_is_given(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # fixed roots (not tmp_path): one pair in 2,047 shares a range, and these two are known not to
    first, second = LocalBackendConfig(root_dir=Path("/srv/job-a")), LocalBackendConfig(root_dir=Path("/srv/job-b"))
    assert first.host_uid_base != second.host_uid_base
    assert first.host_uid_base == LocalBackendConfig(root_dir=Path("/srv/job-a")).host_uid_base  # stable
    monkeypatch.chdir(tmp_path)  # a relative root is the folder it names, from where it was given
    relative = LocalBackendConfig(root_dir=Path("sandboxes"))
    assert relative.root_dir == tmp_path.resolve() / "sandboxes"
    assert relative.host_uid_base == LocalBackendConfig(root_dir=tmp_path / "sandboxes").host_uid_base
    for config in (first, second):
        assert 0x7000_0000 <= config.host_uid_base < 2**31 - 1 - 65_536
    assert LocalBackendConfig(root_dir=tmp_path, uid_base=5000).host_uid_base == 5000


def test_a_uid_range_past_the_largest_uid_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="largest uid"):
        LocalBackendConfig(root_dir=tmp_path, uid_base=2**31 - 100, max_sandboxes=1024)
    with pytest.raises(ValueError):
        LocalBackendConfig(root_dir=tmp_path, uid_base=0)
