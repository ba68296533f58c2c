"""The local backend (the default): isolated sandboxes on this machine with bubblewrap.

On first use it probes what the machine allows (see :mod:`.probe`), logs what
it chose, and reaps what a crashed process left under its root directory.
``create`` returns at once; the sandbox starts in the background (about 25 ms
here), so callers overlap it with other work and wait only when they need it.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import itertools
import logging
import os
import signal
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from verifiers.sandboxes.backend import SandboxBackend
from verifiers.sandboxes.errors import (
    SandboxFileTooLargeError,
    SandboxNotRunningError,
    SandboxTimeoutError,
    SandboxUnavailableError,
)
from verifiers.sandboxes.local import gvisor, image, slots
from verifiers.sandboxes.local.config import LocalBackendConfig
from verifiers.sandboxes.local.pool import WarmPool
from verifiers.sandboxes.local.probe import Capabilities, probe
from verifiers.sandboxes.local.sandbox import FILES_DIR, HostContext, LocalSandbox
from verifiers.sandboxes.metrics import ExecOutcome, SandboxCounts, sandbox_metrics
from verifiers.sandboxes.models import CommandResponse, CreateSandboxRequest, Sandbox, SandboxStatus

logger = logging.getLogger("verifiers.sandboxes")

_AGENT_SOURCE = Path(__file__).resolve().parent.parent / "agent.py"
_KEEP_ENDED = 10_000  # records of ended sandboxes kept for get() and idempotent delete()
_PROBED: dict[str, Capabilities] = {}  # one probe per configuration and process
_LIVE_BACKENDS: weakref.WeakSet[LocalBackend] = weakref.WeakSet()


class LocalBackend(SandboxBackend):
    """Sandboxes on this machine. Safe to share between clients in one event loop."""

    name = "local"

    def __init__(self, config: LocalBackendConfig | None = None) -> None:
        self.config = config or LocalBackendConfig()
        self._host: HostContext | None = None
        self._start_lock = threading.Lock()
        self._live: dict[str, LocalSandbox] = {}
        self._ended: OrderedDict[str, Sandbox] = OrderedDict()
        self._by_key: dict[str, str] = {}
        self._expiry: dict[str, asyncio.TimerHandle] = {}
        self._idle: dict[str, asyncio.TimerHandle] = {}
        self._slot_hint = itertools.count()
        self._background: set[asyncio.Future[None]] = set()
        self._starts = asyncio.Semaphore(self.config.max_parallel_starts or 2 * (os.cpu_count() or 1))
        self._pool: WarmPool | None = None
        if self.config.warm_pool_size:
            self._pool = WarmPool(self.config.warm_pool_size, self._spawn, self._discard)

    # -- start-up -----------------------------------------------------------------------------

    @property
    def capabilities(self) -> Capabilities | None:
        """What the probe found (None before the first sandbox)."""
        return self._host.caps if self._host else None

    @property
    def warm(self) -> int:
        """Pooled sandboxes running and waiting to be handed out."""
        return self._pool.ready() if self._pool is not None else 0

    def counts(self) -> SandboxCounts:
        """Sandboxes handed out, and pooled ones ready and starting (the metrics' live and pool gauges)."""
        pooled = self._pool.pooled() if self._pool is not None else 0
        return SandboxCounts(live=len(self._live), pool_ready=self.warm, pool_starting=pooled - self.warm)

    async def start(self) -> Capabilities:
        """Probe, reap leftovers, and get ready; done once, on first use."""
        if self._host is None:
            await asyncio.to_thread(self._start_sync)
            _LIVE_BACKENDS.add(self)
            sandbox_metrics().track(self)
            _install_sigterm_cleanup()
        assert self._host is not None
        return self._host.caps

    def _start_sync(self) -> None:
        with self._start_lock:
            if self._host is None:
                self._host = self._prepare_host()
                atexit.register(self.close_sync)

    def _prepare_host(self) -> HostContext:
        root = self.config.root_dir
        root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            root.chmod(0o711)
        agent_file = self._install_agent(root)
        key = self.config.model_dump_json()
        caps = _PROBED.get(key) or probe(self.config, agent_file)
        _PROBED[key] = caps
        slots.reap(root, FILES_DIR, caps.cgroups, _runsc_reaper(self.config, caps))
        return HostContext(self.config, caps, agent_file)

    @staticmethod
    def _install_agent(root: Path) -> Path:
        """Copy the agent where sandbox uids can read it, named by content so versions never clash."""
        source = _AGENT_SOURCE.read_bytes()
        target = root / f"agent-{hashlib.sha256(source).hexdigest()[:12]}.py"
        if not target.exists():
            tmp = root / f".{target.name}.{os.getpid()}"
            tmp.write_bytes(source)
            tmp.chmod(0o644)
            tmp.replace(target)
        return target

    # -- the SandboxBackend API ---------------------------------------------------------------

    async def create(self, request: CreateSandboxRequest, idempotency_key: str | None = None) -> Sandbox:
        called = time.perf_counter()
        if request.gpu_count:
            raise SandboxUnavailableError("the local backend has no GPUs to give (gpu_count must be 0)")
        if request.image_dir is not None:
            image.check(request.image_dir)
        await self.start()
        if request.image_dir is not None and self.capabilities is not None and self.capabilities.mode == "none":
            raise SandboxUnavailableError("image_dir needs bubblewrap: without isolation there is no /image to "
                                          "mount it on")
        if idempotency_key is not None and idempotency_key in self._by_key:
            return await self.get(self._by_key[idempotency_key])
        sandbox = (self._pool.take(request) if self._pool is not None else None) or self._spawn(request)
        record = sandbox.record
        record.name, record.labels = request.name, list(request.labels)
        record.timeout_minutes, record.idle_timeout_minutes = request.timeout_minutes, request.idle_timeout_minutes
        record.created_at = datetime.now(timezone.utc)
        self._live[record.id] = sandbox
        if idempotency_key is not None:
            self._by_key[idempotency_key] = record.id
        loop = asyncio.get_running_loop()
        self._expiry[record.id] = loop.call_later(request.timeout_minutes * 60, self._expire, record.id)
        if request.idle_timeout_minutes is not None:
            sandbox.last_call = time.monotonic()
            self._idle[record.id] = loop.call_later(request.idle_timeout_minutes * 60, self._check_idle, record.id)
        _time_creation(sandbox, called)
        return record.model_copy()

    def _spawn(self, request: CreateSandboxRequest) -> LocalSandbox:
        """A sandbox starting in the background, not yet handed out."""
        assert self._host is not None
        record = Sandbox(
            id=f"sbx-{uuid.uuid4().hex[:20]}", name=request.name, status=SandboxStatus.PENDING,
            labels=list(request.labels), cpu_cores=request.cpu_cores, memory_gb=request.memory_gb,
            disk_size_gb=request.disk_size_gb, max_processes=request.max_processes,
            timeout_minutes=request.timeout_minutes, network_access=request.network_access,
            docker_image=request.docker_image,
        )
        sandbox = LocalSandbox(record, request, self._host, next(self._slot_hint) % self.config.max_sandboxes)
        sandbox.ready_task = asyncio.create_task(self._start_sandbox(sandbox))
        return sandbox

    def _discard(self, sandbox: LocalSandbox) -> None:
        """Remove a pooled sandbox that never went to anyone."""
        self._live[sandbox.record.id] = sandbox
        self._hold(asyncio.ensure_future(self._end(sandbox, SandboxStatus.TERMINATED, "discarded from the pool")))

    def _hold(self, task: asyncio.Future[None]) -> None:
        self._background.add(task)  # the loop keeps only weak references to tasks
        task.add_done_callback(self._background.discard)

    async def _start_sandbox(self, sandbox: LocalSandbox) -> None:
        try:
            async with self._starts:  # admission: starting is CPU-bound, more at once only queues
                await sandbox.start()
        except asyncio.TimeoutError:
            sandbox.record.status = SandboxStatus.ERROR
            sandbox.record.error_message = f"not ready within {self.config.ready_timeout_s} s"
            raise SandboxTimeoutError(f"sandbox {sandbox.record.id} did not start within "
                                      f"{self.config.ready_timeout_s} s") from None
        except (OSError, SandboxNotRunningError, SandboxFileTooLargeError) as error:  # the last: image_dir's
            sandbox.record.status = SandboxStatus.ERROR
            sandbox.record.error_message = str(error)
            log = sandbox.slot.path / "agent.log" if sandbox.slot else None
            detail = log.read_text(errors="replace")[-500:] if log and log.exists() else ""
            message = f"sandbox {sandbox.record.id} failed to start: {error} {detail}"
            raise SandboxNotRunningError(message.strip()) from error

    def _sandbox(self, sandbox_id: str) -> LocalSandbox:
        sandbox = self._live.get(sandbox_id)
        if sandbox is None:
            ended = self._ended.get(sandbox_id)
            state = f"was deleted ({ended.status.value})" if ended else "does not exist"
            raise SandboxNotRunningError(f"sandbox {sandbox_id} {state}")
        return sandbox

    async def wait_ready(self, sandbox_id: str, timeout: float) -> Sandbox:
        sandbox = self._sandbox(sandbox_id)
        try:
            await asyncio.wait_for(sandbox.wait_ready(), timeout)
        except asyncio.TimeoutError:
            raise SandboxTimeoutError(f"sandbox {sandbox_id} was not ready within {timeout} s") from None
        return sandbox.record.model_copy()

    async def get(self, sandbox_id: str) -> Sandbox:
        if sandbox_id in self._ended:
            return self._ended[sandbox_id].model_copy()
        return self._sandbox(sandbox_id).record.model_copy()

    async def list(self, labels: list[str] | None = None) -> list[Sandbox]:
        wanted = set(labels or [])
        return [s.record.model_copy() for s in self._live.values() if wanted <= set(s.record.labels)]

    async def execute(self, sandbox_id: str, command: str, *, timeout: float, working_dir: str | None = None,
                      env: dict[str, str] | None = None) -> CommandResponse:
        sandbox = self._sandbox(sandbox_id)
        try:
            with sandbox.in_use():
                await sandbox.wait_ready()  # the exec latency is the command's, not the start's
                started = time.perf_counter()
                outcome: ExecOutcome = "error"
                try:
                    response = await sandbox.execute(command, timeout, working_dir, env)
                    outcome = _outcome(response)
                    return response
                finally:
                    sandbox_metrics().observe_exec(time.perf_counter() - started, outcome)
        except SandboxNotRunningError:
            if sandbox.record.status is SandboxStatus.ERROR:  # died under us: clean it up now
                await self._end(sandbox, SandboxStatus.ERROR, "the sandbox failed")
            raise

    async def write_file(self, sandbox_id: str, path: str, data: bytes) -> None:
        sandbox = self._sandbox(sandbox_id)
        with sandbox.in_use():
            await sandbox.write_file(path, data)

    async def read_file(self, sandbox_id: str, path: str, max_bytes: int) -> bytes:
        sandbox = self._sandbox(sandbox_id)
        with sandbox.in_use():
            return await sandbox.read_file(path, max_bytes)

    async def delete(self, sandbox_id: str) -> None:
        sandbox = self._live.get(sandbox_id)
        if sandbox is None:
            if sandbox_id in self._ended:
                return
            raise SandboxNotRunningError(f"sandbox {sandbox_id} does not exist")
        await self._end(sandbox, SandboxStatus.TERMINATED, "the sandbox was deleted")

    async def close(self) -> None:
        for sandbox in self._pool.drain() if self._pool is not None else []:
            self._live[sandbox.record.id] = sandbox
        await asyncio.gather(*(self.delete(sandbox_id) for sandbox_id in list(self._live)))
        self._release_host()

    def close_sync(self) -> None:
        pooled = self._pool.drain() if self._pool is not None else []
        for sandbox in [*self._live.values(), *pooled]:
            self._live.pop(sandbox.record.id, None)
            sandbox.record.status = SandboxStatus.TERMINATED
            try:
                sandbox.teardown(graceful_s=0.0)
            except OSError as error:  # at exit, report and go on: the next start reaps what is left
                logger.warning("could not remove sandbox %s: %s", sandbox.record.id, error)
        self._release_host()

    def _release_host(self) -> None:
        """Remove this root's cgroup parent when it is empty (other backends on the root may still use it)."""
        if self._host is not None and self._host.caps.cgroups is not None:
            self._host.caps.cgroups.remove_parent()

    # -- ending -------------------------------------------------------------------------------

    def _expire(self, sandbox_id: str) -> None:
        sandbox = self._live.get(sandbox_id)
        if sandbox is not None:
            logger.info("sandbox %s reached its lifetime of %s min", sandbox_id, sandbox.record.timeout_minutes)
            self._hold(asyncio.ensure_future(self._end(sandbox, SandboxStatus.TIMEOUT, "its lifetime ran out")))

    def _check_idle(self, sandbox_id: str) -> None:
        sandbox = self._live.get(sandbox_id)
        if sandbox is None or sandbox.record.idle_timeout_minutes is None:
            return
        left = sandbox.idle_left(sandbox.record.idle_timeout_minutes * 60)
        if left > 0:  # used since this timer was set: look again when it could have been idle long enough
            self._idle[sandbox_id] = asyncio.get_running_loop().call_later(left, self._check_idle, sandbox_id)
            return
        logger.info("sandbox %s was idle for %s min", sandbox_id, sandbox.record.idle_timeout_minutes)
        self._hold(asyncio.ensure_future(self._end(sandbox, SandboxStatus.TIMEOUT, "it was idle too long")))

    async def _end(self, sandbox: LocalSandbox, status: SandboxStatus, reason: str) -> None:
        sandbox_id = sandbox.record.id
        if self._live.pop(sandbox_id, None) is None:
            return  # ended concurrently
        if sandbox.record.status is not SandboxStatus.ERROR:
            sandbox.record.status = status
        # Known as ended from this moment, not once stopped: stopping a gVisor sandbox takes seconds on a busy
        # machine, and a get() in between used to answer "does not exist".
        self._ended[sandbox_id] = sandbox.record
        while len(self._ended) > _KEEP_ENDED:
            self._ended.popitem(last=False)
        for timers in (self._expiry, self._idle):
            timer = timers.pop(sandbox_id, None)
            if timer is not None:
                timer.cancel()
        if sandbox.ready_task is not None and not sandbox.ready_task.done():
            sandbox.ready_task.cancel()
        if sandbox.ready_task is not None:
            await asyncio.wait([sandbox.ready_task])
            if not sandbox.ready_task.cancelled():
                sandbox.ready_task.exception()  # retrieved: a failed start was reported to its waiters
        await sandbox.stop(reason)


def _runsc_reaper(config: LocalBackendConfig, caps: Capabilities) -> Callable[[slots.Slot], None] | None:
    """For the gVisor tier: drop runsc's record of a dead owner's container before its slot goes."""
    if caps.mode != "gvisor":
        return None
    state = config.root_dir / gvisor.STATE_DIR

    def reap(slot: slots.Slot) -> None:
        gvisor.remove_slot_containers(caps.runsc or "runsc", state, gvisor.slot_prefix(config.root_dir, slot.number))

    return reap


def _time_creation(sandbox: LocalSandbox, called: float) -> None:
    """Observe the create latency once ``sandbox`` runs (now, for a warm pool's); a failed start is not timed."""

    def observe(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is None:
            sandbox_metrics().observe_create(time.perf_counter() - called)

    task = sandbox.ready_task
    if task is not None:
        task.add_done_callback(observe)  # run at once (soon) for a task already done


def _outcome(response: CommandResponse) -> ExecOutcome:
    if response.timed_out:
        return "timed_out"
    return "oom_killed" if response.oom_killed else "ok"


def _install_sigterm_cleanup() -> None:
    """SIGTERM's default action skips ``atexit``: remove every live sandbox first, then die of it as before.

    Only where SIGTERM still has its default action (an application's own handler is left alone) and
    only from the main thread (the only one that may set handlers); elsewhere the next start reaps.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return
    signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum: int, frame: object) -> None:
    for backend in list(_LIVE_BACKENDS):
        backend.close_sync()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


__all__ = ["LocalBackend"]
