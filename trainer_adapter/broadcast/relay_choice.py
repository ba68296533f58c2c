"""Which relay to fetch the next shard from: in proportion to measured success rate x bandwidth.

Both measures are exponential moving averages over this node's own transfers. A relay not yet measured
is scored as well as the best measured one, so each gets tried; and a share ``explore`` of picks is
uniform, so a relay that was slow or down once is measured again and taken back when it recovers::

    choice = RelayChoice(["http://a/", "http://b/"], seed=0)
    relay = choice.pick()
    choice.record_success(relay, nbytes=2**20, seconds=0.1)   # or choice.record_failure(relay)
"""

from __future__ import annotations

import random
from collections.abc import Collection
from dataclasses import dataclass


@dataclass
class RelayScore:
    """One relay's moving averages: share of transfers that succeeded, bytes per second when they did."""

    success: float = 1.0
    bandwidth: float | None = None


class RelayChoice:
    """Weighted random choice among relays, updated after every transfer."""

    def __init__(self, relays: list[str], alpha: float = 0.3, explore: float = 0.1, seed: int | None = None) -> None:
        if not relays:
            raise ValueError("at least one relay is needed")
        if not 0 < alpha <= 1 or not 0 <= explore <= 1:
            raise ValueError(f"alpha must be in (0, 1] and explore in [0, 1], got {alpha} and {explore}")
        self.relays = list(relays)
        self.alpha = alpha
        self.explore = explore
        self.scores = {relay: RelayScore() for relay in relays}
        self._rng = random.Random(seed)

    def weight(self, relay: str) -> float:
        """Success rate x bandwidth; an unmeasured bandwidth counts as the best measured one (or 1)."""
        score = self.scores[relay]
        measured = [s.bandwidth for s in self.scores.values() if s.bandwidth is not None]
        bandwidth = score.bandwidth if score.bandwidth is not None else max(measured, default=1.0)
        return score.success * bandwidth

    def pick(self, exclude: Collection[str] = ()) -> str:
        """A relay not in ``exclude`` (all of them if every relay is excluded)."""
        candidates = [r for r in self.relays if r not in exclude] or self.relays
        weights = [self.weight(r) for r in candidates]
        if self._rng.random() < self.explore or sum(weights) <= 0:
            return self._rng.choice(candidates)
        return self._rng.choices(candidates, weights=weights)[0]

    def record_success(self, relay: str, nbytes: int, seconds: float) -> None:
        score = self.scores[relay]
        score.success += self.alpha * (1.0 - score.success)
        rate = nbytes / max(seconds, 1e-6)
        score.bandwidth = rate if score.bandwidth is None else score.bandwidth + self.alpha * (rate - score.bandwidth)

    def record_failure(self, relay: str) -> None:
        score = self.scores[relay]
        score.success -= self.alpha * score.success


__all__ = ["RelayChoice", "RelayScore"]
