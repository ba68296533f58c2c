"""The sandboxes' Prometheus metrics: live sandboxes, warm pools, create and exec latency, OOM kills.

The local backend records them in the process that runs it, on that process's registry, so they appear on
whatever endpoint the process serves (:mod:`verifiers.metrics_server`; in training the orchestrator's
``orchestrator.metrics.port``, since environments run there). Live sandboxes
and pool sizes are read from the backends when Prometheus scrapes, so they can never drift from the
truth. Every label value is one of a fixed few, never a sandbox id or name. Without the
``prometheus-client`` package (the ``metrics`` extra) nothing is recorded and sandboxes work as before.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, Protocol

ExecOutcome = Literal["ok", "timed_out", "oom_killed", "error"]
OomScope = Literal["command", "sandbox"]
# Starts take ~25 ms here and seconds on a loaded machine; a warm pool's hand-out takes microseconds.
CREATE_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
EXEC_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


@dataclass(frozen=True)
class SandboxCounts:
    """What one backend holds at a moment."""

    live: int
    """Sandboxes handed out and not yet ended (starting or running)."""
    pool_ready: int
    """Warm-pool sandboxes running and waiting to be handed out."""
    pool_starting: int
    """Warm-pool sandboxes still starting."""


class CountedBackend(Protocol):
    """A backend whose sandboxes the live and pool gauges count."""

    def counts(self) -> SandboxCounts: ...


class SandboxMetrics:
    """The instruments, on ``registry``; with ``registry=None`` (no prometheus-client) every call does nothing."""

    def __init__(self, registry: Any) -> None:
        self.enabled = registry is not None
        self._backends: weakref.WeakSet[Any] = weakref.WeakSet()
        if registry is None:
            return
        from prometheus_client import Counter, Histogram

        self._create = Histogram("vf_sandbox_create_seconds", "Seconds from a create call until its sandbox runs "
                                 "(a warm pool's sandbox: the hand-out alone).", buckets=CREATE_BUCKETS,
                                 registry=registry)
        self._exec = Histogram("vf_sandbox_exec_seconds", "Seconds one command took in a running sandbox, by "
                               "outcome.", ["outcome"], buckets=EXEC_BUCKETS, registry=registry)
        self._oom = Counter("vf_sandbox_oom_kills", "Kills for memory seen: a command (scope=command) or a "
                            "sandbox's agent, which ends the sandbox (scope=sandbox).", ["scope"], registry=registry)
        registry.register(_CountsCollector(self._backends))

    def track(self, backend: CountedBackend) -> None:
        """Count ``backend``'s sandboxes in the live and pool gauges while it exists."""
        if self.enabled:
            self._backends.add(backend)

    def observe_create(self, seconds: float) -> None:
        """A sandbox handed out by ``create`` is running, ``seconds`` after the call."""
        if self.enabled:
            self._create.observe(seconds)

    def observe_exec(self, seconds: float, outcome: ExecOutcome) -> None:
        """A command ended (or failed to run) after ``seconds``."""
        if self.enabled:
            self._exec.labels(outcome).observe(seconds)

    def count_oom_kill(self, scope: OomScope) -> None:
        """The kernel killed a command, or a whole sandbox, for memory."""
        if self.enabled:
            self._oom.labels(scope).inc()


class _CountsCollector:
    """The live and pool gauges, summed over the tracked backends at scrape time."""

    def __init__(self, backends: weakref.WeakSet[Any]) -> None:
        self._backends = backends

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        counts = [backend.counts() for backend in list(self._backends)]
        live = GaugeMetricFamily("vf_sandbox_live", "Sandboxes handed out and not yet ended (starting or running).")
        live.add_metric([], sum(c.live for c in counts))
        pool = GaugeMetricFamily("vf_sandbox_pool", "Warm-pool sandboxes waiting to be handed out, by state.",
                                 labels=["state"])
        pool.add_metric(["ready"], sum(c.pool_ready for c in counts))
        pool.add_metric(["starting"], sum(c.pool_starting for c in counts))
        yield live
        yield pool

    def describe(self) -> Iterator[Any]:
        # Named up front so that the registry refuses a second owner of these names.
        return self.collect()


@cache
def sandbox_metrics() -> SandboxMetrics:
    """This process's sandbox metrics, on its default registry (recording nothing without prometheus-client)."""
    try:
        from prometheus_client import REGISTRY
    except ImportError:
        return SandboxMetrics(None)
    return SandboxMetrics(REGISTRY)


__all__ = ["CountedBackend", "ExecOutcome", "OomScope", "SandboxCounts", "SandboxMetrics", "sandbox_metrics"]
