"""The values the sandbox client takes and returns (pydantic, so they validate and serialise).

Field names follow the hosted client public environments already build
requests for (``CreateSandboxRequest(name=..., cpu_cores=..., memory_gb=...)``);
fields that only make sense here (``max_processes``, ``network_access``) have
safe defaults.
"""

from __future__ import annotations

import enum
import re
from datetime import datetime, timezone

from pydantic import BaseModel, ConfigDict, Field, field_validator

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/=-]{0,127}")


class SandboxStatus(str, enum.Enum):
    """Where a sandbox is in its life."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    ERROR = "ERROR"
    TERMINATED = "TERMINATED"
    TIMEOUT = "TIMEOUT"


class CreateSandboxRequest(BaseModel):
    """What to create: limits, environment and labels of one sandbox."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("sandbox", min_length=1, max_length=128,
                      description="A name for people; ids are unique, names need not be.")
    docker_image: str = Field("python:3.11-slim",
                              description="Image for container backends; the local backend runs the host's /usr.")
    start_command: str | None = Field(None, description="Started in the background once the sandbox is ready.")
    cpu_cores: float = Field(1.0, gt=0, le=256, description="CPU share (cores) the sandbox may use at once.")
    memory_gb: float = Field(1.0, gt=0, le=1024,
                             description="Memory of all its processes (files count against disk_size_gb where "
                                         "the host gives each sandbox a disk image, else against this).")
    disk_size_gb: float = Field(1.0, gt=0, le=1024, description="Size of its writable /workspace and /tmp together.")
    gpu_count: int = Field(0, ge=0, description="GPUs; the local backend has none to give.")
    max_processes: int = Field(256, ge=8, le=65536,
                               description="Most processes and threads alive at once (fork bombs stop here).")
    timeout_minutes: float = Field(60, gt=0, le=1440, description="Lifetime: deleted this long after creation.")
    idle_timeout_minutes: float | None = Field(
        None, gt=0, le=1440,
        description="Deleted after this long without a command or file transfer (none in flight); None: never idle.")
    network_access: bool = Field(False,
                                 description="False: no network at all (own loopback only). True: the host's network.")
    environment_vars: dict[str, str] = Field(default_factory=dict, description="Variables every command sees.")
    secrets: dict[str, str] = Field(default_factory=dict,
                                    description="Like environment_vars, but never logged or returned.")
    labels: list[str] = Field(default_factory=list, description="Tags for listing and bulk deletion.")
    image_dir: str | None = Field(
        None, description="A per-task file system image: an absolute host path to a directory or a tar archive "
                          "(.tar, .tar.gz, .tgz, .tar.bz2, .tar.xz), visible read-only at /image in the sandbox "
                          "(a repository and its dependencies). Local backend only; an archive is unpacked "
                          "onto the sandbox's disk and counts against disk_size_gb.")

    @field_validator("environment_vars", "secrets")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not _ENV_NAME.fullmatch(name):
                raise ValueError(f"bad environment variable name {name!r}")
            if "\0" in text:
                raise ValueError(f"environment variable {name!r} contains a NUL byte")
        return value

    @field_validator("image_dir")
    @classmethod
    def _image_dir(cls, value: str | None) -> str | None:
        if value is not None and (not value.startswith("/") or "\0" in value):
            raise ValueError(f"image_dir must be an absolute host path, not {value!r}")
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: list[str]) -> list[str]:
        for label in value:
            if not _LABEL.fullmatch(label):
                raise ValueError(f"bad label {label!r}: letters, digits and ._:/=- only, at most 128")
        return value


class Sandbox(BaseModel):
    """A sandbox as the backend reports it."""

    id: str
    name: str
    status: SandboxStatus
    labels: list[str] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    cpu_cores: float
    memory_gb: float
    disk_size_gb: float
    max_processes: int
    timeout_minutes: float
    idle_timeout_minutes: float | None = None
    network_access: bool
    docker_image: str
    error_message: str | None = None


class CommandResponse(BaseModel):
    """The outcome of one command: its output and how it ended.

    ``exit_code`` is the shell's: 128+N when killed by signal N (137 for
    SIGKILL, as after an OOM kill or a timeout).
    """

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool = False
    oom_killed: bool = False
    truncated: bool = Field(False, description="stdout or stderr was over the backend's output limit and was cut.")
    duration_s: float = 0.0


class FileContent(BaseModel):
    """A text file read from a sandbox."""

    path: str
    content: str
    size: int


__all__ = ["SandboxStatus", "CreateSandboxRequest", "Sandbox", "CommandResponse", "FileContent"]
