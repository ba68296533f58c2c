"""Writing scores into rollout states: ``reward``, ``metrics``, ``advantage`` and the scoring time."""

from __future__ import annotations

import time
from collections.abc import Iterable, MutableMapping, Sequence
from typing import Any

from verifiers.types import RolloutScore


def write_scores(states: Sequence[MutableMapping[str, Any]], scores: Sequence[RolloutScore], group: bool) -> None:
    """Write each score into its state (State era): ``reward``, ``metrics``, and with ``group`` the
    ``advantage`` (reward minus the group's mean); trajectory steps without a reward get the rollout's."""
    mean = sum(s.reward for s in scores) / len(scores) if scores else 0.0
    for state, score in zip(states, scores):
        state["reward"] = score.reward
        state["metrics"] = dict(score.metrics)
        if group:
            state["advantage"] = score.reward - mean
        for step in state.get("trajectory") or []:
            if step.get("reward") is None:
                step["reward"] = score.reward
            if group and step.get("advantage") is None:
                step["advantage"] = score.reward - mean


def add_scoring_time(states: Iterable[MutableMapping[str, Any] | None], start: float) -> None:
    """Record the time since ``start`` as each state's ``timing["scoring_ms"]`` and add it to the total."""
    elapsed_ms = (time.perf_counter() - start) * 1000.0
    for state in states:
        if not isinstance(state, MutableMapping):
            continue
        timing = state.get("timing")
        if not isinstance(timing, MutableMapping):
            timing = state["timing"] = {"generation_ms": 0.0, "scoring_ms": 0.0, "total_ms": 0.0}
        timing["scoring_ms"] = elapsed_ms
        timing["total_ms"] = timing.get("total_ms", 0.0) + elapsed_ms


__all__ = ["add_scoring_time", "write_scores"]
