"""The orchestrator's Prometheus metrics: rollouts, off-policy steps, dropped and rejected rollouts, step time.

They sit beside ``orchestrator_metrics.jsonl`` (which stays the record of a run) for watching a run live:
the launcher serves them at ``orchestrator.metrics.port`` (docs/observability.md). Label values come from
fixed sets in the code (a drop's or a rejection's reason), never from data, so the series count is bounded.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Literal

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

DropReason = Literal["failed", "incomplete", "stale", "cancelled", "lost", "invalid"]
"""A rollout that cannot train: it errored or had no tokens, its group came back short, it was too far
off-policy when its batch was cut, its group was cancelled in flight at a weight update, its group was in
flight on an inference server that went down (its problem is asked again on another server), or the validator
rejected its group (orchestrator.validation)."""
OFF_POLICY_BUCKETS = (0, 1, 2, 3, 4, 6, 8, 12, 16, 32)


class OrchestratorMetrics:
    """The orchestrator's instruments, on ``registry``."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.rollouts = Counter("vf_orchestrator_rollouts", "Rollouts that came back from the inference servers "
                                "(rate: rollouts/s).", registry=registry)
        self.dropped = Counter("vf_orchestrator_dropped_rollouts", "Rollouts that cannot train, by reason: failed, "
                               "incomplete (group), stale (off-policy), cancelled (at a weight update), lost (its "
                               "server went down), invalid (rejected by the validator).", ["reason"], registry=registry)
        self.rejected = Counter("vf_orchestrator_rejected_rollouts", "Rollouts the difficulty buffer's filters "
                                "refused, by filter: uniform (equal rewards), easy, hard.", ["reason"],
                                registry=registry)
        self.off_policy = Histogram("vf_orchestrator_off_policy_steps", "Versions each trained group lags the "
                                    "weights of its step, one observation per group.", buckets=OFF_POLICY_BUCKETS,
                                    registry=registry)
        self.step_seconds = Histogram("vf_orchestrator_step_seconds", "Seconds to produce one batch, its wait for "
                                      "weights included.", buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
                                      registry=registry)
        self.wait_seconds = Counter("vf_orchestrator_wait_for_weights_seconds", "Seconds batches waited for the "
                                    "trainer's weights (max_async_level's barrier).", registry=registry)
        self.step = Gauge("vf_orchestrator_step", "The last batch written (its step).", registry=registry)
        self.servers_up = Gauge("vf_orchestrator_servers_up", "Inference servers taking rollouts (up and holding "
                                "the current weights).", registry=registry)
        self.weights_version = Gauge("vf_orchestrator_weights_version", "Weights version the servers hold.",
                                     registry=registry)

    def batch_written(self, step: int, lags: Sequence[int], seconds: float, waited: float) -> None:
        """Batch ``step`` went to the trainer: its groups' off-policy steps, its time and its wait for weights."""
        self.step.set(step)
        for lag in lags:
            self.off_policy.observe(lag)
        self.step_seconds.observe(seconds)
        self.wait_seconds.inc(waited)

    def drop(self, reason: DropReason, rollouts: int) -> None:
        """``rollouts`` rollouts will not train, for ``reason``."""
        if rollouts:
            self.dropped.labels(reason).inc(rollouts)


@cache
def orchestrator_metrics() -> OrchestratorMetrics:
    """This process's orchestrator metrics, on its default registry (one set however many orchestrators run)."""
    return OrchestratorMetrics()


__all__ = ["DropReason", "OrchestratorMetrics", "orchestrator_metrics"]
