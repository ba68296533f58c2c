"""The validator's Prometheus metrics and its per-worker rejection ledger.

Prometheus labels come from fixed sets only (a check's name, an outcome), so workers, whose names are data,
are counted in :class:`RejectionLedger` instead (in memory, for the orchestrator to act on).
"""

from __future__ import annotations

from collections import Counter as Tally
from dataclasses import dataclass, field
from functools import cache

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

from trainer_adapter.validate.checks import CheckName


class ValidatorMetrics:
    """Batches validated by outcome, rejections by the checks that failed, and seconds per batch."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.batches = Counter(
            "vf_validator_batches",
            "Submitted batches validated, by outcome: accepted or rejected (dropped).",
            ["outcome"],
            registry=registry,
        )
        self.rejections = Counter(
            "vf_validator_rejections",
            "Rejected batches by check that failed (a batch failing two checks counts under both).",
            ["check"],
            registry=registry,
        )
        self.seconds = Histogram(
            "vf_validator_seconds",
            "Seconds to validate one batch.",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=registry,
        )

    def record(self, checks: set[CheckName], seconds: float) -> None:
        """One batch validated in ``seconds``; ``checks`` failed (empty: accepted)."""
        self.batches.labels("rejected" if checks else "accepted").inc()
        for check in checks:
            self.rejections.labels(check).inc()
        self.seconds.observe(seconds)


@dataclass
class RejectionLedger:
    """Per worker: batches submitted and batches rejected, and by which checks."""

    submitted: Tally[str] = field(default_factory=Tally)
    rejected: Tally[str] = field(default_factory=Tally)
    by_check: dict[str, Tally[CheckName]] = field(default_factory=dict)

    def record(self, worker: str, checks: set[CheckName]) -> None:
        """``worker`` submitted one batch; ``checks`` failed on it."""
        self.submitted[worker] += 1
        if checks:
            self.rejected[worker] += 1
            self.by_check.setdefault(worker, Tally()).update(checks)


@cache
def validator_metrics() -> ValidatorMetrics:
    """This process's validator metrics, on its default registry."""
    return ValidatorMetrics()


__all__ = ["RejectionLedger", "ValidatorMetrics", "validator_metrics"]
