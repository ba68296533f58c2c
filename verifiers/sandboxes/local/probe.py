"""What isolation this machine allows: probed once when the local backend starts, then logged.

Each feature is tried for real (a bubblewrap run with the exact flags the
backend will use, a tmpfs mount, a cgroup), never inferred from versions.
What is missing is listed in :attr:`Capabilities.gaps` with what it leaves
open, and logged as a warning; the unisolated mode is only used when asked for.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from verifiers.sandboxes.errors import SandboxUnavailableError
from verifiers.sandboxes.local import cgroups as cgroup_mod
from verifiers.sandboxes.local import disk
from verifiers.sandboxes.local.cgroup_detect import detect as detect_cgroups
from verifiers.sandboxes.local.config import LocalBackendConfig
from verifiers.sandboxes.local.launcher import LaunchPlan, etc_files, launcher_args, seccomp_memfd
from verifiers.sandboxes.local.mounts import mount_tmpfs, unmount
from verifiers.sandboxes.local.seccomp import build_filter

logger = logging.getLogger("verifiers.sandboxes")

SETUP_HINT = "install bubblewrap (`bash scripts/setup_sandbox.sh`, i.e. apt-get install -y bubblewrap)"


@dataclass
class Capabilities:
    """The isolation the local backend will use."""

    mode: str  # "bwrap", "gvisor" or "none"
    bwrap: str | None = None
    runsc: str | None = None  # the gVisor tier's runsc
    disable_userns: bool = False
    setpriv: str | None = None  # set when each sandbox gets its own host uid
    tmpfs: bool = False
    disk: bool = False  # an ext4 image per sandbox (wins over tmpfs: a full disk is ENOSPC, not an OOM kill)
    cgroups: cgroup_mod.CgroupDriver | None = None
    seccomp_filter: bytes | None = None
    gaps: list[str] = field(default_factory=list)

    @property
    def per_sandbox_uid(self) -> bool:
        return self.setpriv is not None or self.mode == "gvisor"  # runsc runs its guest as the slot's uid

    def summary(self) -> str:
        if self.mode == "none":
            return "NO ISOLATION (isolation='none'): commands run as plain host processes"
        cg = f"cgroup {self.cgroups.version} ({','.join(self.cgroups.controllers)})" if self.cgroups else "no cgroups"
        if self.mode == "gvisor":
            return ", ".join([f"gVisor ({self.runsc}, ptrace platform)", "own host uid per sandbox",
                              "ext4 image disk" if self.disk else "tmpfs workdir" if self.tmpfs else "plain workdir",
                              cg])
        return ", ".join([
            f"bubblewrap ({self.bwrap})",
            "own host uid per sandbox" if self.per_sandbox_uid else "caller's uid",
            "ext4 image disk" if self.disk else "tmpfs workdir" if self.tmpfs else "plain workdir",
            cg,
            "seccomp" if self.seccomp_filter else "no seccomp",
        ])


def cgroup_parent_name(root_dir: Path) -> str:
    """The cgroup directory of one root's sandboxes (two roots never reap each other's)."""
    return "verifiers-sandboxes-" + hashlib.sha256(str(root_dir).encode()).hexdigest()[:10]


def _try_mount(target: Path, mount: Callable[[Path], None], what: str) -> bool:
    """Whether ``mount(target)`` works here; whatever it mounted is unmounted and ``target`` removed."""
    target.mkdir(exist_ok=True)
    try:
        mount(target)
    except OSError as error:
        logger.debug("%s mount not possible: %s", what, error)
        return False
    else:
        unmount(target)
        return True
    finally:
        target.rmdir()


def _try_tmpfs(root_dir: Path) -> bool:
    return _try_mount(root_dir / f".probe-{os.getpid()}", lambda target: mount_tmpfs(target, 1 << 20), "tmpfs")


def _try_disk(root_dir: Path) -> bool:
    if not disk.tools_present():
        logger.debug("no disk images: mke2fs or mount is missing")
        return False
    if disk.on_tmpfs(root_dir):
        logger.debug("no disk images: %s is in memory, so an image there would be too", root_dir)
        return False
    image = root_dir / f".probe-disk-{os.getpid()}.img"
    try:
        return _try_mount(root_dir / f".probe-disk-{os.getpid()}",
                          lambda target: disk.mount_disk(image, target, 0), "disk image")
    finally:
        image.unlink(missing_ok=True)


def _smoke_plan(caps: Capabilities, config: LocalBackendConfig, scratch: Path, agent_file: Path) -> LaunchPlan:
    for name in ("workspace", "tmp", "shm", "etc"):
        (scratch / name).mkdir(exist_ok=True)
        (scratch / name).chmod(0o777)
    for name, text in etc_files().items():
        (scratch / "etc" / name).write_text(text)
    return LaunchPlan(bwrap=caps.bwrap or "bwrap", python=config.python, agent_file=agent_file,
                      files_dir=scratch, etc_dir=scratch / "etc",
                      disable_userns=caps.disable_userns)


def _run_smoke(caps: Capabilities, plan: LaunchPlan) -> subprocess.CompletedProcess[bytes]:
    """Run the real sandbox command line, with a one-line Python program instead of the agent."""
    fd = seccomp_memfd(caps.seccomp_filter) if caps.seccomp_filter is not None else None
    plan.seccomp_fd = fd
    try:
        argv = launcher_args(plan, [plan.python, "-I", "-S", "-c", "import os; print(os.getuid())"])
        return subprocess.run(argv, capture_output=True, timeout=30, pass_fds=() if fd is None else (fd,),
                              env={"PATH": "/usr/bin:/bin"})
    finally:
        if fd is not None:
            os.close(fd)


def probe(config: LocalBackendConfig, agent_file: Path) -> Capabilities:
    """Find out what works here; raise SandboxUnavailableError when bubblewrap cannot run at all."""
    if config.isolation == "none":
        caps = Capabilities(mode="none", gaps=["no isolation at all: commands can read, write and reach "
                                                "everything the calling user can"])
        logger.error("local sandboxes run WITHOUT ISOLATION (isolation='none'): only for trusted code")
        return caps
    if config.tier == "gvisor":
        from verifiers.sandboxes.local.probe_gvisor import probe_gvisor  # it builds on this module

        return probe_gvisor(config, agent_file)
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailableError(f"bubblewrap (bwrap) is not installed: {SETUP_HINT}, "
                                      "or pass LocalBackendConfig(isolation='none') for trusted code only")
    if not os.access(config.python, os.X_OK):
        raise SandboxUnavailableError(f"the agent's Python {config.python} does not exist (LocalBackendConfig.python)")
    caps = Capabilities(mode="bwrap", bwrap=bwrap)
    caps.disable_userns = b"--disable-userns" in subprocess.run([bwrap, "--help"], capture_output=True).stdout
    root = os.geteuid() == 0
    caps.setpriv = shutil.which("setpriv") if root else None
    if caps.setpriv:
        check_searchable(config.root_dir)
    probe_host(caps, config, root)
    caps.seccomp_filter = build_filter() if config.seccomp else None
    _smoke_test(caps, config, agent_file)
    _note_gaps(caps, config, root)
    log_choice(caps)
    return caps


def probe_host(caps: Capabilities, config: LocalBackendConfig, root: bool) -> None:
    """What either tier takes from the host: a tmpfs, a loop-mounted disk image (both as root), cgroups."""
    caps.tmpfs = root and _try_tmpfs(config.root_dir)
    caps.disk = root and _try_disk(config.root_dir)
    caps.cgroups = detect_cgroups(cgroup_parent_name(config.root_dir)) if config.cgroups else None
    if caps.cgroups is not None:
        caps.cgroups.weight_per_sandbox = config.cpu_weight == "per_sandbox"


def log_choice(caps: Capabilities) -> None:
    """Log what the backend chose, and each gap as a warning."""
    logger.info("local sandboxes: %s", caps.summary())
    for gap in caps.gaps:
        logger.warning("local sandboxes: %s", gap)


def _smoke_test(caps: Capabilities, config: LocalBackendConfig, agent_file: Path) -> None:
    """Run bubblewrap bare, then with the uid switch, then with seccomp: keep what works."""
    scratch = config.root_dir / f".smoke-{os.getpid()}"
    scratch.mkdir(exist_ok=True)
    scratch.chmod(0o711)
    wanted_setpriv, wanted_filter = caps.setpriv, caps.seccomp_filter
    caps.setpriv, caps.seccomp_filter = None, None
    try:
        plan = _smoke_plan(caps, config, scratch, agent_file)
        result = _run_smoke(caps, plan)
        if result.returncode != 0 and caps.disable_userns:
            caps.disable_userns = plan.disable_userns = False
            result = _run_smoke(caps, plan)
        if result.returncode != 0:
            raise SandboxUnavailableError(
                "bubblewrap is installed but cannot create a sandbox here (user namespaces disabled?): "
                + result.stderr.decode(errors="replace").strip()[-500:])
        if wanted_setpriv:
            plan.setpriv, plan.host_uid = wanted_setpriv, config.host_uid_base + config.max_sandboxes
            caps.setpriv = wanted_setpriv if _run_smoke(caps, plan).returncode == 0 else None
            if caps.setpriv is None:
                plan.setpriv, plan.host_uid = None, None
        if wanted_filter:
            caps.seccomp_filter = wanted_filter
            if _run_smoke(caps, plan).returncode != 0:
                caps.seccomp_filter = None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def check_searchable(root: Path) -> None:
    """Sandboxes run as other uids: every directory down to the root must let them through."""
    for directory in [root, *root.parents]:
        mode = os.stat(directory).st_mode
        if not mode & 0o001:
            raise SandboxUnavailableError(
                f"{directory} is not searchable by other users (mode {oct(mode & 0o777)}), so sandbox uids "
                f"cannot reach {root}: choose another LocalBackendConfig.root_dir")


def _note_gaps(caps: Capabilities, config: LocalBackendConfig, root: bool) -> None:
    gaps = caps.gaps
    if not caps.per_sandbox_uid:
        gaps.append("sandboxes run as the caller's uid" + (" (setpriv failed)" if root else " (not root)")
                    + ": processes are not counted per sandbox")
    if not caps.disk and caps.tmpfs:
        gaps.append("no loop-mounted disk image: files live in a tmpfs charged to memory_gb, so filling the disk "
                    "is an out-of-memory kill rather than ENOSPC")
    elif not caps.disk:
        gaps.append("no disk image or size-limited tmpfs: disk use is capped per file (RLIMIT_FSIZE) only")
    if caps.cgroups is None:
        gaps.append("no writable cgroups: memory is capped by RLIMIT_AS, processes by RLIMIT_NPROC only with "
                    "a per-sandbox uid, CPU not at all")
    else:
        for controller, effect in (("memory", "memory"), ("pids", "process count"), ("cpu", "CPU share")):
            if controller not in caps.cgroups.controllers:
                gaps.append(f"cgroup controller {controller} missing: {effect} not limited by cgroups")
    if caps.seccomp_filter is None:
        gaps.append("no seccomp filter" + ("" if config.seccomp else " (disabled in config)")
                    + ": mount/ptrace/keyctl/bpf/io_uring rely on namespaces alone")
    if not caps.disable_userns:
        gaps.append("bwrap has no --disable-userns: nested user namespaces are refused by seccomp only")


__all__ = ["Capabilities", "probe", "cgroup_parent_name", "SETUP_HINT"]
