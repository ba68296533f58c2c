"""One sandbox of the local backend: its slot, directories, cgroup, bubblewrap process and agent."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from verifiers.errors import SandboxError
from verifiers.sandboxes.errors import (
    SandboxFileNotFoundError,
    SandboxNotRunningError,
    SandboxOOMError,
)
from verifiers.sandboxes.local import files, gvisor, gvisor_limits, image, slots
from verifiers.sandboxes.local.cgroups import Limits, SandboxCgroup
from verifiers.sandboxes.local.config import LocalBackendConfig
from verifiers.sandboxes.local.disk import IMAGE_NAME, mount_disk
from verifiers.sandboxes.local.launcher import (
    SANDBOX_PATH,
    SANDBOX_UID,
    LaunchPlan,
    agent_command,
    etc_files,
    in_cgroups,
    launcher_args,
    seccomp_memfd,
)
from verifiers.sandboxes.local.link import AgentGone, AgentLink
from verifiers.sandboxes.local.mounts import mount_tmpfs
from verifiers.sandboxes.local.probe import Capabilities
from verifiers.sandboxes.metrics import sandbox_metrics
from verifiers.sandboxes.models import CommandResponse, CreateSandboxRequest, Sandbox, SandboxStatus

logger = logging.getLogger("verifiers.sandboxes")

FILES_DIR = "files"
_AGENT_MARGIN_S = 10.0  # the agent answers at the timeout; past this margin it is wedged
_GIB = 1 << 30


@dataclass
class HostContext:
    """What every sandbox of one backend shares."""

    config: LocalBackendConfig
    caps: Capabilities
    agent_file: Path


class LocalSandbox:
    """Starts, serves and tears down one sandbox. ``record`` is what callers see."""

    def __init__(self, record: Sandbox, request: CreateSandboxRequest, host: HostContext, slot_hint: int) -> None:
        self.record = record
        self.request = request
        self.host = host
        self.slot_hint = slot_hint
        self.slot: slots.Slot | None = None
        self.cgroup: SandboxCgroup | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.link: AgentLink | None = None
        self.ready_task: asyncio.Task[None] | None = None
        self._oom_seen = 0  # the cgroup's OOM-kill count at the last check (a new cgroup starts at 0)
        self.calls_in_flight = 0  # an idle timeout never ends a sandbox while a call is running
        self.last_call = time.monotonic()

    # -- paths --------------------------------------------------------------------------------

    @property
    def files_dir(self) -> Path:
        assert self.slot is not None
        return self.slot.path / FILES_DIR

    @property
    def isolated(self) -> bool:
        return self.host.caps.mode in ("bwrap", "gvisor")

    @property
    def gvisor(self) -> bool:
        return self.host.caps.mode == "gvisor"

    @property
    def container(self) -> str:
        """runsc's name for this sandbox's container (the gVisor tier)."""
        assert self.slot is not None
        return gvisor.container_id(self.host.config.root_dir, self.slot.number, self.record.id)

    def areas(self) -> dict[str, str]:
        """Sandbox path prefix → host directory, for file transfer."""
        return {"/workspace": str(self.files_dir / "workspace"), "/tmp": str(self.files_dir / "tmp")}

    def _agent_path(self, path: str) -> str:
        """Inside bwrap paths are the sandbox's; without isolation they map onto the host directories."""
        if self.isolated:
            return path
        for area, host_dir in self.areas().items():
            if path == area or path.startswith(area + "/"):
                return host_dir + path[len(area):]
        return path

    @property
    def host_uid(self) -> int | None:
        if self.slot is None or not self.host.caps.per_sandbox_uid:
            return None
        return self.host.config.host_uid_base + self.slot.number

    # -- start --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Prepare the directories and cgroup, start bubblewrap and wait for the agent."""
        self._prepare()
        if self.request.image_dir is not None and image.is_archive(self.request.image_dir):
            await asyncio.to_thread(image.unpack, self.request.image_dir, self.files_dir / "image")
        self._spawn()
        assert self.link is not None
        await self.link.open(self.host.config.ready_timeout_s)
        self.record.status = SandboxStatus.RUNNING
        self.last_call = time.monotonic()  # idle from now (a pooled one: from its hand-out)

    def _prepare(self) -> None:
        config, caps = self.host.config, self.host.caps
        self.slot = slots.claim(config.root_dir, config.max_sandboxes, self.slot_hint)
        self.slot.write_owner(self.record.id)
        disk_bytes = int(self.request.disk_size_gb * _GIB)
        self.files_dir.mkdir()
        if caps.disk:  # the image sits beside files/, so the slot's removal deletes it
            mount_disk(self.slot.path / IMAGE_NAME, self.files_dir, disk_bytes)
        elif caps.tmpfs:
            mount_tmpfs(self.files_dir, disk_bytes)
        owner = (self.host_uid, self.host_uid) if self.host_uid is not None else None
        for name, mode in (("workspace", 0o755), ("tmp", 0o1777), ("shm", 0o1777)):
            path = self.files_dir / name
            path.mkdir()
            path.chmod(mode)
            if owner:
                os.chown(path, *owner)
        etc = self.slot.path / "etc"
        etc.mkdir()
        for name, text in etc_files(self.host_uid if self.gvisor and self.host_uid else SANDBOX_UID).items():
            (etc / name).write_text(text)
            (etc / name).chmod(0o644)
        if caps.cgroups is not None:
            self.cgroup = caps.cgroups.create(self.slot.cgroup_name, self._host_limits())

    def _host_limits(self) -> Limits:
        """The cgroup's limits. Under gVisor the cgroup holds the Sentry, whose own memory and host tasks
        (threads, ptrace stubs) come on top: max_processes is then held inside, by RLIMIT_NPROC."""
        memory, processes = int(self.request.memory_gb * _GIB), self.request.max_processes
        if self.gvisor:
            memory = gvisor_limits.memory_limit(memory, processes)
            processes = gvisor_limits.pids_limit(processes)
        return Limits(memory, processes, self.request.cpu_cores)

    def _agent_config(self) -> dict[str, object]:
        caps, request = self.host.caps, self.request
        workspace, tmp = self._agent_path("/workspace"), self._agent_path("/tmp")
        env = {"PATH": SANDBOX_PATH, "HOME": workspace, "TMPDIR": tmp, "LANG": "C.UTF-8", "USER": "sandbox",
               **request.environment_vars, **request.secrets}
        rlimits: dict[str, int] = {"CORE": 0, "FSIZE": int(request.disk_size_gb * _GIB)}
        controllers = caps.cgroups.controllers if caps.cgroups else ()
        if "memory" not in controllers or self.gvisor:  # gVisor: past the cgroup the Sentry dies, not a command
            rlimits["AS"] = max(int(request.memory_gb * _GIB), 256 << 20)
        if ("pids" not in controllers or self.gvisor) and self.host_uid is not None:
            rlimits["NPROC"] = request.max_processes
        return {"env": env, "rlimits": rlimits, "max_output": self.host.config.max_output_bytes,
                "cwd": workspace, "own_pid_namespace": self.isolated, "start_command": request.start_command}

    def _image_on_host(self) -> Path | None:
        """The host directory mounted at /image: the request's own, or its archive unpacked in the slot."""
        wanted = self.request.image_dir
        if wanted is None:
            return None
        return self.files_dir / "image" if image.is_archive(wanted) else Path(wanted)

    def _spawn(self) -> None:
        assert self.slot is not None
        config, caps = self.host.config, self.host.caps
        agent_json = json.dumps(self._agent_config(), separators=(",", ":"))
        plan = LaunchPlan(
            bwrap=caps.bwrap or "bwrap", python=config.python, agent_file=self.host.agent_file,
            files_dir=self.files_dir, etc_dir=self.slot.path / "etc",
            network=self.request.network_access, host_uid=self.host_uid, setpriv=caps.setpriv,
            disable_userns=caps.disable_userns,
            cgroup_procs=self.cgroup.procs_files if self.cgroup is not None else [],
            image=self._image_on_host(),
        )
        seccomp_fd = seccomp_memfd(caps.seccomp_filter) if caps.mode == "bwrap" and caps.seccomp_filter else None
        plan.seccomp_fd = seccomp_fd
        if self.gvisor:
            argv = self._runsc_argv(plan, agent_command(plan, agent_json))
        elif self.isolated:
            argv = launcher_args(plan, agent_command(plan, agent_json))
        else:
            argv = [config.python, "-I", "-S", str(self.host.agent_file), agent_json]
        try:
            with open(self.slot.path / "agent.log", "wb") as log:
                # A new session keeps a terminal's Ctrl-C away from sandboxes; bwrap's
                # die-with-parent still ties them to this process.
                self.process = subprocess.Popen(
                    argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env={"PATH": "/usr/bin:/bin"},
                    pass_fds=() if seccomp_fd is None else (seccomp_fd,), start_new_session=True,
                    cwd=self.files_dir / "workspace",
                )
        finally:
            if seccomp_fd is not None:
                os.close(seccomp_fd)
        self.link = AgentLink(self.process)

    def _runsc_argv(self, plan: LaunchPlan, command: list[str]) -> list[str]:
        """Write this sandbox's OCI bundle into its slot; the argv that joins its cgroups and runs it."""
        assert self.slot is not None and self.host_uid is not None
        bundle = self.slot.path / gvisor.BUNDLE_DIR
        gvisor.write_bundle(bundle, gvisor.oci_spec(plan, command, self.host_uid))
        state = self.host.config.root_dir / gvisor.STATE_DIR
        runsc = gvisor.runsc_args(self.host.caps.runsc or "runsc", state, bundle, self.container, plan.network)
        return in_cgroups(plan.cgroup_procs, runsc)

    # -- use ----------------------------------------------------------------------------------

    @contextlib.contextmanager
    def in_use(self) -> Iterator[None]:
        """Mark a call (command or file transfer) in flight, for the idle timeout."""
        self.calls_in_flight += 1
        try:
            yield
        finally:
            self.calls_in_flight -= 1
            self.last_call = time.monotonic()

    def idle_left(self, idle_s: float) -> float:
        """Seconds until the sandbox has been idle ``idle_s`` (all of it while starting or while a call runs)."""
        if self.calls_in_flight or self.record.status is SandboxStatus.PENDING:
            return idle_s
        return self.last_call + idle_s - time.monotonic()

    async def wait_ready(self) -> None:
        if self.record.status in (SandboxStatus.TERMINATED, SandboxStatus.TIMEOUT):
            raise SandboxNotRunningError(f"sandbox {self.record.id} was deleted ({self.record.status.value})")
        assert self.ready_task is not None
        await asyncio.shield(self.ready_task)

    async def execute(self, command: str, timeout: float, working_dir: str | None,
                      env: dict[str, str] | None) -> CommandResponse:
        await self.wait_ready()
        assert self.link is not None
        size = len(command.encode())
        if size > self.host.config.max_command_bytes:
            raise SandboxError(f"the command has {size} bytes, over max_command_bytes="
                               f"{self.host.config.max_command_bytes}: upload it as a file and run that")
        cwd = self._agent_path(working_dir) if working_dir else None
        request = {"command": command, "timeout": timeout, "cwd": cwd, "env": env or {}}
        try:
            reply = await self.link.call(request, timeout + _AGENT_MARGIN_S)
        except AgentGone:
            raise self.lost_error() from None
        except asyncio.TimeoutError:
            self.record.status = SandboxStatus.ERROR
            self.record.error_message = "the agent stopped answering"
            raise SandboxNotRunningError(f"sandbox {self.record.id} stopped answering") from None
        if "error" in reply:
            if reply.get("kind") == "not_found":
                raise SandboxFileNotFoundError(reply["error"])
            raise SandboxError(reply["error"])
        oom = not reply["timed_out"] and reply["exit_code"] == 137 and self._new_oom_kill()
        if oom:
            sandbox_metrics().count_oom_kill("command")
        return CommandResponse(
            stdout=reply["stdout"], stderr=reply["stderr"], exit_code=reply["exit_code"],
            timed_out=reply["timed_out"], oom_killed=oom, truncated=reply["truncated"], duration_s=reply["duration_s"],
        )

    def _new_oom_kill(self) -> bool:
        """Whether the kernel killed a process here for memory since the last check. Checked only after
        a SIGKILL, so the common path of a command reads no cgroup file."""
        if self.cgroup is None:
            return False
        count = self.cgroup.oom_kills()
        seen, self._oom_seen = self._oom_seen, count
        return count > seen

    def lost_error(self) -> SandboxError:
        """The error for a sandbox whose agent vanished: deleted, OOM-killed, or crashed."""
        if self.record.status in (SandboxStatus.TERMINATED, SandboxStatus.TIMEOUT):
            return SandboxNotRunningError(f"sandbox {self.record.id} was deleted ({self.record.status.value})")
        self.record.status = SandboxStatus.ERROR
        if self._new_oom_kill():
            sandbox_metrics().count_oom_kill("sandbox")
            self.record.error_message = "killed for memory"
            return SandboxOOMError(f"sandbox {self.record.id} ran out of memory and its agent was killed")
        if self.gvisor and self.cgroup is not None and self.cgroup.pids_limit_hits() > 0:
            # runsc panics when a clone of its own fails: gvisor_limits says when that can happen
            self.record.error_message = "the gVisor Sentry reached the host's task limit (pids.max) and exited"
            return SandboxNotRunningError(f"sandbox {self.record.id} stopped: {self.record.error_message}; "
                                          f"max_processes={self.request.max_processes} is past what this host "
                                          "lets one gVisor sandbox's Sentry use (docs/sandboxes.md)")
        self.record.error_message = "the agent exited"
        return SandboxNotRunningError(f"sandbox {self.record.id} stopped: its agent exited")

    async def write_file(self, path: str, data: bytes) -> None:
        await self.wait_ready()
        root, parts = files.split_sandbox_path(path, self.areas(), "/workspace")
        owner = (self.host_uid, self.host_uid) if self.host_uid is not None else None
        await asyncio.to_thread(files.write_file, root, parts, path, data, owner)

    async def read_file(self, path: str, max_bytes: int) -> bytes:
        await self.wait_ready()
        root, parts = files.split_sandbox_path(path, self.areas(), "/workspace")
        return await asyncio.to_thread(files.read_file, root, parts, path, max_bytes)

    # -- end ----------------------------------------------------------------------------------

    async def stop(self, reason: str) -> None:
        """Fail calls in flight with ``reason``, kill everything and remove every trace on the host."""
        if self.link is not None:
            self.link.abort(reason)
            if not self.isolated:  # the unisolated agent kills its commands when its stdin closes
                self.link.close()
        await asyncio.to_thread(self.teardown)
        if self.link is not None:
            self.link.close()

    def teardown(self, graceful_s: float = 1.0) -> None:
        """Kill everything and remove every trace on the host: blocking, thread-safe, safe to call twice and on
        a half-started sandbox. Without isolation the agent gets ``graceful_s`` to kill its commands."""
        if self.process is not None:
            self._stop_process(graceful_s)
        slot, self.slot = self.slot, None
        if slot is not None:
            slots.release(slot, slot.path / FILES_DIR, self.host.caps.cgroups)

    def _stop_process(self, graceful_s: float) -> None:
        process = self.process
        assert process is not None
        if self.gvisor:  # runsc kills the guest's kernel; its own `run` then exits
            gvisor.remove_container(self.host.caps.runsc or "runsc", self.host.config.root_dir / gvisor.STATE_DIR,
                                    self.container)
            graceful_s = 5.0
        elif self.isolated:
            # Kill the pid namespace's init (bwrap's child): the kernel kills the whole namespace and bwrap
            # reaps it. Ending it any other way lets bwrap exit first and leave that init a zombie of pid 1.
            for child in _children(process.pid):
                _kill(child)
            graceful_s = 2.0
        try:
            process.wait(timeout=graceful_s)
            return
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


__all__ = ["LocalSandbox", "HostContext", "FILES_DIR"]
