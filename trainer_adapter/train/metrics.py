"""The trainer's Prometheus metrics (RL and SFT): tokens/s, loss, mismatch KL, grad norm, step time.

Rank 0 records them and serves them (``metrics.port`` in the trainer's config): the values it logs to
its metrics JSONL are already reduced over all ranks, so one endpoint tells the whole step, and the other
ranks need no port of their own. No labels: one trainer process, one series per metric.
"""

from __future__ import annotations

from functools import cache

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

STEP_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)


class TrainerMetrics:
    """The trainer's instruments, on ``registry``."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.tokens = Counter("vf_trainer_tokens", "Tokens trained on, all ranks: RL counts every position run "
                              "forward and backward, SFT the completion tokens of its loss (rate: tokens/s).",
                              registry=registry)
        self.tokens_per_second = Gauge("vf_trainer_tokens_per_second", "The last step's tokens over its time (its "
                                       "wait for the batch excluded).", registry=registry)
        self.loss = Gauge("vf_trainer_loss", "The last step's loss.", registry=registry)
        self.mismatch_kl = Gauge("vf_trainer_mismatch_kl", "The last RL step's KL between the inference and the "
                                 "trainer's token distributions (sampled tokens; 0: the same weights and kernels).",
                                 registry=registry)
        self.grad_norm = Gauge("vf_trainer_grad_norm", "The last step's gradient norm, before clipping.",
                               registry=registry)
        self.step = Gauge("vf_trainer_step", "Optimizer steps done.", registry=registry)
        self.step_seconds = Histogram("vf_trainer_step_seconds", "Seconds per optimizer step, its wait for the "
                                      "batch included.", buckets=STEP_BUCKETS, registry=registry)

    def record_step(self, step: int, tokens: int, loss: float, grad_norm: float, seconds: float,
                    busy_seconds: float, mismatch_kl: float | None = None) -> None:
        """Step ``step`` is done: ``tokens`` positions in ``busy_seconds`` of work (``seconds`` with the wait)."""
        self.step.set(step)
        self.tokens.inc(tokens)
        self.tokens_per_second.set(tokens / busy_seconds if busy_seconds > 0 else 0.0)
        self.loss.set(loss)
        self.grad_norm.set(grad_norm)
        if mismatch_kl is not None:
            self.mismatch_kl.set(mismatch_kl)
        self.step_seconds.observe(seconds)


@cache
def trainer_metrics() -> TrainerMetrics:
    """This process's trainer metrics, on its default registry."""
    return TrainerMetrics()


__all__ = ["TrainerMetrics", "trainer_metrics"]
