"""The gVisor tier's probe: runsc found, run for real with the exact bundle layout, and its gaps named."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from verifiers.sandboxes.errors import SandboxUnavailableError
from verifiers.sandboxes.local import gvisor
from verifiers.sandboxes.local.config import LocalBackendConfig
from verifiers.sandboxes.local.launcher import LaunchPlan, etc_files
from verifiers.sandboxes.local.probe import Capabilities, log_choice, probe_host

RUNSC_HINT = "install gVisor's runsc (`bash scripts/setup_sandbox.sh`, i.e. apt-get install -y runsc)"
# coreutils' ls and stat call statx with AT_NO_AUTOMOUNT, which runsc 0.0~20221219 refuses (EINVAL)
_SMOKE = ("import os, subprocess; print(os.getuid()); "
          "print(subprocess.run(['/usr/bin/stat', '-c', '%u', '/']).returncode)")


def probe_gvisor(config: LocalBackendConfig, agent_file: Path) -> Capabilities:
    """What the gVisor tier can do here; raises SandboxUnavailableError when it cannot run at all."""
    if os.geteuid() != 0:
        raise SandboxUnavailableError("the gVisor tier needs root (runsc run creates namespaces, cgroups and "
                                      "its gofer as root): run as root or use tier='bubblewrap'")
    runsc = shutil.which("runsc") or shutil.which("runsc", path="/usr/sbin:/usr/bin")
    if runsc is None:
        raise SandboxUnavailableError(f"gVisor's runsc is not installed: {RUNSC_HINT}")
    if not os.access(config.python, os.X_OK):
        raise SandboxUnavailableError(f"the agent's Python {config.python} does not exist (LocalBackendConfig.python)")
    caps = Capabilities(mode="gvisor", runsc=runsc)
    probe_host(caps, config, root=True)
    statx_ok = _smoke_test(caps, config, agent_file)
    _note_gaps(caps, statx_ok)
    log_choice(caps)
    return caps


def _smoke_test(caps: Capabilities, config: LocalBackendConfig, agent_file: Path) -> bool:
    """Run the real bundle with a one-line program instead of the agent; True when statx works inside."""
    scratch = config.root_dir / f".smoke-gvisor-{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    uid = config.host_uid_base + config.max_sandboxes  # the probe's uid, as in the bubblewrap tier
    try:
        files = scratch / "files"
        for name in ("workspace", "tmp", "shm", "etc"):
            (files / name).mkdir(parents=True)
            (files / name).chmod(0o777)
        for name, text in etc_files(uid).items():
            (files / "etc" / name).write_text(text)
        plan = LaunchPlan(bwrap="", python=config.python, agent_file=agent_file, files_dir=files,
                          etc_dir=files / "etc")
        bundle = scratch / gvisor.BUNDLE_DIR
        gvisor.write_bundle(bundle, gvisor.oci_spec(plan, [config.python, "-I", "-S", "-c", _SMOKE], uid))
        state = config.root_dir / gvisor.STATE_DIR
        name = f"vf-probe-{os.getpid()}"
        argv = gvisor.runsc_args(caps.runsc or "runsc", state, bundle, name, network=False)
        try:
            # stdout must be a pipe: runsc hands the guest its descriptors, and a file would be overwritten
            result = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
                                    env={"PATH": "/usr/bin:/bin"})
        except subprocess.TimeoutExpired:
            gvisor.remove_container(caps.runsc or "runsc", state, name)
            raise SandboxUnavailableError("runsc did not finish a one-line program within 60 s") from None
        lines = result.stdout.decode(errors="replace").split()
        if result.returncode != 0 or not lines or lines[0] != str(uid):
            raise SandboxUnavailableError("runsc is installed but cannot run a sandbox here: "
                                          + result.stderr.decode(errors="replace").strip()[-500:])
        return lines[-1] == "0"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _note_gaps(caps: Capabilities, statx_ok: bool) -> None:
    gaps = caps.gaps
    if not caps.disk:
        gaps.append("no loop-mounted disk image: disk use is capped by tmpfs size or RLIMIT_FSIZE only")
    if caps.cgroups is None or "memory" not in caps.cgroups.controllers:
        gaps.append("no memory cgroup: the Sentry's memory is not capped on the host (each process still is, "
                    "by RLIMIT_AS)")
    else:
        gaps.append("memory: each process is capped at memory_gb of address space; processes that together pass "
                    "memory_gb make the host kill the Sentry, and the sandbox is lost (SandboxOOMError)")
    if not statx_ok:
        gaps.append("this runsc refuses statx with AT_NO_AUTOMOUNT (EINVAL): coreutils' ls -l, stat and du fail "
                    "inside (`ls: cannot access '/': Invalid argument`); newer gVisor releases accept it")


__all__ = ["probe_gvisor", "RUNSC_HINT"]
