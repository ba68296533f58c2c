"""Configuration of the local sandbox backend (one pydantic model; the CLI and docs read its fields)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# Default uid ranges live in 0x70000000-0x7FFFFFFF: above the users, subuid ranges and systemd's
# container ranges (which end at 0x6FFFFFFF), and below 2**31, past which bwrap's uid switch fails here.
_UID_FLOOR = 0x7000_0000
_UID_LIMIT = 2**31 - 1  # the first uid not used
_UID_BLOCK = 2**17  # one root's range: up to 65,536 slots plus the probe's uid
_UID_BLOCKS = (_UID_LIMIT - _UID_FLOOR) // _UID_BLOCK


Tier = Literal["bubblewrap", "gvisor"]  # LocalBackendConfig.tier: the isolation tiers


def default_root_dir() -> Path:
    """``/var/lib/verifiers/sandboxes`` for root; ``$XDG_RUNTIME_DIR`` or ``~/.cache`` below it otherwise."""
    if os.geteuid() == 0:
        return Path("/var/lib/verifiers/sandboxes")
    base = os.environ.get("XDG_RUNTIME_DIR") or str(Path.home() / ".cache")
    return Path(base) / "verifiers" / "sandboxes"


class LocalBackendConfig(BaseModel):
    """How the local backend isolates sandboxes on this machine."""

    model_config = ConfigDict(extra="forbid")

    isolation: Literal["auto", "bwrap", "none"] = Field(
        "auto",
        description=(
            "auto/bwrap: bubblewrap namespaces (fail if unavailable). none: plain processes with a cleared "
            "environment and NO isolation - for trusted code only; must be asked for and is logged as unsafe."
        ),
    )
    tier: Tier = Field(
        "bubblewrap",
        description=(
            "The isolation tier. bubblewrap: namespaces, cgroups and seccomp on the host kernel (fast: the "
            "default). gvisor: each sandbox runs under gVisor's user-space kernel (`runsc`, as root; "
            "`scripts/setup_sandbox.sh` installs it), a boundary of its own for untrusted, multi-tenant code, "
            "at a higher start and exec cost (docs/sandboxes.md)."
        ),
    )
    root_dir: Path = Field(
        default_factory=default_root_dir,
        description="Where sandbox directories live on the host (every parent must be world-searchable).")
    python: str = Field(
        "/usr/bin/python3",
        description="The Python that runs the agent inside sandboxes (sandboxes see the host's /usr).")
    uid_base: int | None = Field(
        None, ge=1000,
        description=(
            "As root, sandbox slot n runs as host uid uid_base+n (unused uids, one per sandbox). Default: a "
            "range of its own per root_dir in 0x70000000-0x7FFFFFFF (one of 2,047), so backends on different roots "
            "almost never share uids; set uid_base per root to be certain."
        ),
    )
    max_sandboxes: int = Field(
        1024, ge=1, le=65536,
        description="Most sandboxes alive at once on this machine, across processes sharing root_dir.")
    max_output_bytes: int = Field(
        256 * 1024, ge=1024,
        description="Per command and stream, output beyond this is dropped and flagged as truncated.")
    max_command_bytes: int = Field(
        100 * 1024, ge=1024,
        description="Longest command accepted (the kernel refuses arguments over 128 KiB); upload longer scripts.")
    ready_timeout_s: float = Field(30.0, gt=0, description="How long a sandbox may take to start before it fails.")
    warm_pool_size: int = Field(
        0, ge=0, le=4096,
        description="Sandboxes kept started ahead of demand per sandbox shape (0: none; each idles at ~10 MB).")
    max_parallel_starts: int | None = Field(
        None, ge=1,
        description="Sandboxes starting at once; more wait their turn (default: twice the CPU count).")
    seccomp: bool = Field(True, description="Install the seccomp filter where the architecture is supported.")
    cgroups: bool = Field(True, description="Limit memory, processes and CPU with cgroups where writable.")
    cpu_weight: Literal["per_sandbox", "shared"] = Field(
        "per_sandbox",
        description=(
            "How sandboxes share contended CPU with the host's other processes (each stays capped at its "
            "cpu_cores). per_sandbox: each weighs as much as one host process, as a plain subprocess would. "
            "shared: all of them together weigh as much as one process, so the host's own work comes first."
        ),
    )

    @field_validator("root_dir")
    @classmethod
    def _absolute(cls, root: Path) -> Path:
        # The root names the sandboxes' cgroup parent and uid range: "sandboxes" from two working
        # folders must not name the same ones.
        return root.expanduser().resolve()

    @model_validator(mode="after")
    def _uids_fit(self) -> LocalBackendConfig:
        # the probe's uid is uid_base + max_sandboxes; past the limit the uid switch fails and
        # sandboxes would quietly run as the caller instead
        if self.uid_base is not None and self.uid_base + self.max_sandboxes >= _UID_LIMIT:
            raise ValueError(f"uid_base {self.uid_base} + max_sandboxes {self.max_sandboxes} passes the largest "
                             f"uid a sandbox can switch to ({_UID_LIMIT - 1})")
        return self

    @property
    def host_uid_base(self) -> int:
        """The uid of slot 0: ``uid_base``, or the range this root_dir hashes to.

        Why per root: two backends on different roots (two jobs, two test runs) both
        number their slots from 0, and with one shared base their sandboxes would
        run as the same host uids.
        """
        if self.uid_base is not None:
            return self.uid_base
        digest = int(hashlib.sha256(str(self.root_dir).encode()).hexdigest()[:8], 16)
        return _UID_FLOOR + (digest % _UID_BLOCKS) * _UID_BLOCK


__all__ = ["LocalBackendConfig", "Tier", "default_root_dir"]
