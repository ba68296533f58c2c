"""Which rollouts the list shows: all, those at or above a reward threshold, or those below it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from verifiers.viewer.rollouts import RolloutRow

Mode = Literal["all", "at_least", "below"]
_NEXT: dict[Mode, Mode] = {"all": "at_least", "at_least": "below", "below": "all"}


@dataclass(frozen=True)
class RewardFilter:
    """A reward filter; rows without a reward (errored lines) pass only ``all``."""

    mode: Mode = "all"
    threshold: float = 0.5

    def cycled(self) -> RewardFilter:
        """The next mode, all → ≥ threshold → < threshold → all, at the same threshold."""
        return replace(self, mode=_NEXT[self.mode])

    def at_least(self, minimum: float) -> RewardFilter:
        """Rows with reward ≥ ``minimum`` (what typing a minimum sets)."""
        return RewardFilter("at_least", minimum)

    def matches(self, row: RolloutRow) -> bool:
        if self.mode == "all":
            return True
        if row.reward is None:
            return False
        return row.reward >= self.threshold if self.mode == "at_least" else row.reward < self.threshold

    def describe(self) -> str:
        """``all rollouts``, ``reward ≥ 0.5`` or ``reward < 0.5``."""
        if self.mode == "all":
            return "all rollouts"
        return f"reward {'≥' if self.mode == 'at_least' else '<'} {self.threshold:g}"


__all__ = ["Mode", "RewardFilter"]
