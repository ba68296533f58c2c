"""Warm pools: sandboxes started ahead of demand, one pool per sandbox shape, never reused.

The first ``create`` of a shape (limits, environment, network, start command)
opens a pool for it; from then on a ``create`` takes a sandbox that is already
running (or the one closest to it) in O(1), and the pool starts a replacement
in the background. A sandbox leaves the pool once and is deleted after its
rollout like any other: nothing from one episode can reach the next.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from verifiers.sandboxes.local.sandbox import LocalSandbox
from verifiers.sandboxes.models import CreateSandboxRequest, SandboxStatus

_SHAPE = {"docker_image", "start_command", "cpu_cores", "memory_gb", "disk_size_gb", "max_processes",
          "network_access", "environment_vars", "secrets", "image_dir"}


def shape_key(request: CreateSandboxRequest) -> str:
    """What makes two requests interchangeable (name, labels and lifetime are set at hand-out)."""
    return request.model_dump_json(include=_SHAPE)


class WarmPool:
    """Keeps ``size`` sandboxes started per shape.

    Args:
        size: sandboxes kept ready per shape.
        spawn: starts a sandbox for a request (not yet handed to anyone).
        discard: takes back a pooled sandbox whose start failed, to remove it.
    """

    def __init__(self, size: int, spawn: Callable[[CreateSandboxRequest], LocalSandbox],
                 discard: Callable[[LocalSandbox], None]) -> None:
        self.size = size
        self._spawn = spawn
        self._discard = discard
        self._queues: dict[str, deque[LocalSandbox]] = {}
        self._requests: dict[str, CreateSandboxRequest] = {}

    def take(self, request: CreateSandboxRequest) -> LocalSandbox | None:
        """A started (or starting) sandbox of this shape, or None the first time a shape is seen."""
        key = shape_key(request)
        self._requests.setdefault(key, request.model_copy(deep=True))
        queue = self._queues.setdefault(key, deque())
        taken = None
        while queue and taken is None:
            candidate = queue.popleft()
            if _failed(candidate):
                self._discard(candidate)
            else:
                taken = candidate
        self._fill(key)
        return taken

    def _fill(self, key: str) -> None:
        queue = self._queues[key]
        while len(queue) < self.size:
            queue.append(self._spawn(self._requests[key]))

    def ready(self) -> int:
        """How many pooled sandboxes are running (the rest are starting)."""
        return sum(s.record.status is SandboxStatus.RUNNING for q in self._queues.values() for s in q)

    def pooled(self) -> int:
        """How many sandboxes the pool holds, running or starting."""
        return sum(len(q) for q in self._queues.values())

    def drain(self) -> list[LocalSandbox]:
        """Every pooled sandbox, leaving the pool empty and closed to refills."""
        pooled = [s for q in self._queues.values() for s in q]
        self._queues.clear()
        self._requests.clear()
        return pooled


def _failed(sandbox: LocalSandbox) -> bool:
    task = sandbox.ready_task
    return task is not None and task.done() and (task.cancelled() or task.exception() is not None)


__all__ = ["WarmPool", "shape_key"]
