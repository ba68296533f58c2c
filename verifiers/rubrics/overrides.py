"""Rubric subclasses that score on their own: which scoring method a user's subclass overrides.

Classic environments subclass ``Rubric`` and override a scoring method instead of (or
besides) listing reward functions. Both classic releases honour such an override wherever
they score: the 0.1.x environment calls ``rubric.score_rollout(prompt, completion, ...)`` for
every rollout, and a ``RubricGroup`` (both eras) calls each member's own ``score_rollout`` or
``score_group``. The SDK's fast path scores from the functions directly, so it asks here first.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping, MutableMapping
from typing import Any, Literal

from verifiers.rollout.era import user_override
from verifiers.rubrics.injection import RolloutArguments
from verifiers.rubrics.rubric import write_scores
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
        scores = await asyncio.gather(*(_tuple_call(rubric, r) for r in rollouts))
        return [_as_score(rubric, score) for score in scores]
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


async def score_states(rubric: Any, states: list[MutableMapping[str, Any]], tuple_era: bool) -> None:
    """Score one example's rollouts as the environment's era did, writing reward, metrics and advantage.

    A rubric overriding the tuple era's ``score_rollout(prompt, completion, ...)`` scores each rollout
    through it (the rollouts at once), as 0.1.x did; one overriding ``score_group`` is called with the
    group; otherwise the rubric scores from its functions, with the era's order of running them.
    """
    override = scoring_override(rubric)
    if override == "tuple_score_rollout":
        rollouts = [RolloutArguments.from_state(state) for state in states]
        named = await score_with_override(rubric, override, rollouts)
        for score in named:  # 0.1.x reported every function's name, 0.0 where a score had none
            for name in rubric.get_reward_func_names():
                score.metrics.setdefault(name, 0.0)
        write_scores(states, named, group=True)
    elif override == "score_group" or not tuple_era:
        await rubric.score_group(states)
    else:
        await rubric._score_states(states, {}, group=True, tuple_era=True)


def _tuple_call(rubric: Any, rollout: RolloutArguments) -> Any:
    f = rollout.fields
    return rubric.score_rollout(f["prompt"], f["completion"], f["answer"], rollout.state, f["task"], f["info"],
                                **rollout.overrides)


def _as_score(rubric: Any, score: Any) -> RolloutScore:
    if isinstance(score, RolloutScore):
        return score
    if isinstance(score, Mapping) and "reward" in score:
        return RolloutScore(reward=score["reward"], metrics=score.get("metrics") or {})
    raise TypeError(f"{type(rubric).__name__}.score_rollout returned {type(score).__name__}, not a RolloutScore")


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
