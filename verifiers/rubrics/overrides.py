"""Rubric subclasses that score on their own: which scoring method a user's subclass overrides.

Classic environments subclass ``Rubric`` and override a scoring method instead of (or
besides) listing reward functions. Both classic releases honour such an override wherever
they score: the 0.1.x environment calls ``rubric.score_rollout(prompt, completion, ...)`` for
every rollout, and a ``RubricGroup`` (both eras) calls each member's own ``score_rollout`` or
``score_group``. The SDK's fast path scores from the functions directly, so it asks here first.

Which shape an override has is decided here; a tuple-era ``score_rollout(prompt, completion, ...)``
override is called by :mod:`verifiers.compat.scoring` (this module is that seam).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping, MutableMapping
from typing import Any, Literal

from verifiers.compat.scoring import score_group_through_tuple_override, score_through_tuple_override
from verifiers.rollout.era import user_override
from verifiers.rubrics.injection import RolloutArguments
from verifiers.types import RolloutScore

Override = Literal["score_group", "tuple_score_rollout", "state_score_rollout"]

_SCORE_KEYS = ("reward", "metrics", "advantage")


def scoring_override(rubric: Any) -> Override | None:
    """The scoring method ``rubric``'s class overrides outside the SDK, if any (``score_group`` first)."""
    cls = type(rubric)
    if user_override(cls, "score_group") is not None:
        return "score_group"
    method = user_override(cls, "score_rollout")
    if method is None:
        return None
    params = [p.name for p in inspect.signature(method).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][1:]  # without self
    # By the first parameter's name: a 0.2-style ``score_rollout(self, state, score_sem=None)`` has two.
    return "state_score_rollout" if not params or params[0] == "state" else "tuple_score_rollout"


async def score_with_override(rubric: Any, override: Override, rollouts: list[RolloutArguments]) -> list[RolloutScore]:
    """Score through the overridden method and read back what it returned or wrote into each state.

    A State-era override writes into the states (``reward``, ``metrics``, ``advantage``, and a
    ``super()`` call the steps' rewards too); all of that is put back after reading, as the
    classic ``RubricGroup`` did, so the group's own totals are what stays.
    """
    if override == "tuple_score_rollout":
        return await score_through_tuple_override(rubric, rollouts)
    states = [r.state for r in rollouts if r.state is not None]
    saved = [_snapshot(state) for state in states]
    try:
        if override == "score_group":
            await rubric.score_group(states)
        else:
            await asyncio.gather(*(rubric.score_rollout(state) for state in states))
        return [_read(state) for state in states]
    finally:
        for state, snapshot in zip(states, saved):
            _restore(state, snapshot)


async def score_states(rubric: Any, states: list[MutableMapping[str, Any]]) -> None:
    """Score one example's rollouts as the State era did, writing reward, metrics and advantage: through a
    tuple-era ``score_rollout(prompt, completion, ...)`` override where the rubric has one (0.3.0 called it
    too), else through the rubric's ``score_group`` (its own override, or the functions run in order)."""
    if scoring_override(rubric) == "tuple_score_rollout":
        await score_group_through_tuple_override(rubric, states)
    else:
        await rubric.score_group(states)


def _snapshot(state: MutableMapping[str, Any]) -> tuple[dict[str, Any], list[tuple[Any, Any]]]:
    values = {key: state.get(key) for key in _SCORE_KEYS}
    if isinstance(values["metrics"], Mapping):
        values["metrics"] = dict(values["metrics"])
    steps = [(step.get("reward"), step.get("advantage")) for step in state.get("trajectory") or []]
    return values, steps


def _restore(state: MutableMapping[str, Any], snapshot: tuple[dict[str, Any], list[tuple[Any, Any]]]) -> None:
    values, steps = snapshot
    for key, value in values.items():
        state[key] = value
    for step, (reward, advantage) in zip(state.get("trajectory") or [], steps):
        step["reward"], step["advantage"] = reward, advantage


def _read(state: MutableMapping[str, Any]) -> RolloutScore:
    metrics = state.get("metrics") or {}
    return RolloutScore(reward=float(state.get("reward") or 0.0), metrics={k: float(v) for k, v in metrics.items()})


__all__ = ["Override", "score_states", "score_with_override", "scoring_override"]
