"""The command line that starts one sandbox: join its cgroups, drop to its uid, enter bubblewrap, run the agent.

Inside, the sandbox sees the host's ``/usr`` (read-only, with the usual
``/bin``, ``/lib`` links), a synthetic ``/etc`` of a few files, its own
``/proc`` and a read-only ``/dev``, and three writable directories, ``/workspace``,
``/tmp`` and ``/dev/shm``, that are its own (on its disk image or size-limited tmpfs
where the host allows). No writable tmpfs is left in the sandbox: its files would stay
charged to the sandbox's memory after their writer was killed, and the next OOM kill
would take the agent.
The root is a read-only tmpfs: the host's ``/run``, ``/tmp``, ``/home`` and
``/root`` do not exist there. Every namespace is new (network too, unless
asked for), no capability is kept, nested user namespaces are refused, the
environment is cleared, and it dies with the process that launched it.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from verifiers.sandboxes.local.image import IMAGE_PATH

SANDBOX_UID = 1000
AGENT_PATH = "/opt/verifiers/agent.py"
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_ETC_SHARED = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "nsswitch.conf")
_ETC_NETWORK = ("resolv.conf", "ssl", "ca-certificates", "gai.conf")


@dataclass
class LaunchPlan:
    """Everything that differs between two sandboxes' command lines."""

    bwrap: str
    python: str
    agent_file: Path
    files_dir: Path
    etc_dir: Path
    network: bool = False
    host_uid: int | None = None
    setpriv: str | None = None
    seccomp_fd: int | None = None
    disable_userns: bool = True
    cgroup_procs: list[Path] = field(default_factory=list)
    image: Path | None = None  # the per-task image, mounted read-only at IMAGE_PATH


def _top_level_links() -> list[str]:
    args: list[str] = []
    for name in _TOP_LEVEL:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", str(path.readlink()), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    return args


def bwrap_args(plan: LaunchPlan, command: list[str]) -> list[str]:
    """``bwrap ... -- command`` for ``plan``."""
    args = [plan.bwrap, "--unshare-all", "--unshare-user"]
    if plan.disable_userns:
        args.append("--disable-userns")
    if plan.network:
        args.append("--share-net")
    args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv",
             "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", "sandbox",
             "--ro-bind", "/usr", "/usr", *_top_level_links()]
    shared = _ETC_SHARED + (_ETC_NETWORK if plan.network else ())
    for name in shared:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for name in ("passwd", "group", "hosts"):
        args += ["--ro-bind", str(plan.etc_dir / name), f"/etc/{name}"]
    args += ["--proc", "/proc", "--dev", "/dev",
             "--bind", str(plan.files_dir / "shm"), "/dev/shm", "--remount-ro", "/dev",
             "--bind", str(plan.files_dir / "workspace"), "/workspace",
             "--bind", str(plan.files_dir / "tmp"), "/tmp",
             "--ro-bind", str(plan.agent_file), AGENT_PATH,
             *(["--ro-bind", str(plan.image), IMAGE_PATH] if plan.image is not None else []),
             "--remount-ro", "/", "--chdir", "/workspace"]
    if plan.seccomp_fd is not None:
        args += ["--seccomp", str(plan.seccomp_fd)]
    return [*args, "--", *command]


def agent_command(plan: LaunchPlan, agent_json: str) -> list[str]:
    """The agent, run by the sandbox's Python in isolated mode (no site, no user paths)."""
    return [plan.python, "-I", "-S", AGENT_PATH, agent_json]


def launcher_args(plan: LaunchPlan, command: list[str]) -> list[str]:
    """The full argv: an ``sh`` that joins the cgroups as root (so bwrap's first fork is already
    inside them), then ``setpriv`` to the sandbox's own host uid, then bwrap running ``command``."""
    argv = bwrap_args(plan, command)
    if plan.host_uid is not None and plan.setpriv:
        uid = str(plan.host_uid)
        argv = [plan.setpriv, "--reuid", uid, "--regid", uid, "--clear-groups", "--", *argv]
    return in_cgroups(plan.cgroup_procs, argv)


def in_cgroups(procs_files: list[Path], argv: list[str]) -> list[str]:
    """``argv`` run by an ``sh`` that first joins the cgroups (as root), so its first fork is inside them."""
    if not procs_files:
        return argv
    joins = " && ".join(f"echo $$ > {shlex.quote(str(p))}" for p in procs_files)
    return ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh", *argv]


def seccomp_memfd(program: bytes) -> int:
    """A descriptor holding ``program`` at offset 0, for ``bwrap --seccomp FD`` (the caller closes it)."""
    fd = os.memfd_create("verifiers-seccomp")
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def etc_files(uid: int = SANDBOX_UID) -> dict[str, str]:
    """The sandbox's /etc/passwd, group and hosts: one user (``uid`` inside), its own name for localhost."""
    return {
        "passwd": "root:x:0:0:root:/:/usr/sbin/nologin\n"
                  f"sandbox:x:{uid}:{uid}:sandbox:/workspace:/bin/bash\n"
                  "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        "group": f"root:x:0:\nsandbox:x:{uid}:\nnogroup:x:65534:\n",
        "hosts": "127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost\n",
    }


__all__ = ["LaunchPlan", "bwrap_args", "launcher_args", "in_cgroups", "agent_command", "etc_files", "seccomp_memfd",
           "SANDBOX_UID", "AGENT_PATH", "SANDBOX_PATH"]
