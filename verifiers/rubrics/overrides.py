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


def scoring_override(rubric: Any) -> Override | None:
    """The scoring method ``rubric``'s class overrides outside the SDK, if any (``score_group`` first)."""
    cls = type(rubric)
    if user_override(cls, "score_group") is not None:
        return "score_group"
    method = user_override(cls, "score_rollout")
    if method is None:
        return None
    params = [p for p in inspect.signature(method).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][1:]  # without self
    return "tuple_score_rollout" if len(params) >= 2 else "state_score_rollout"


async def score_with_override(rubric: Any, override: Override, rollouts: list[RolloutArguments]) -> list[RolloutScore]:
    """Score through the overridden method and read back what it returned or wrote into each state.

    A State-era override writes ``state["reward"]``/``state["metrics"]``; those are restored after
    reading, as the classic ``RubricGroup`` did, so the group's own totals are written last.
    """
    if override == "tuple_score_rollout":
        scores = []
        for r in rollouts:
            f = r.fields
            scores.append(await rubric.score_rollout(f["prompt"], f["completion"], f["answer"], f["state"],
                                                     f["task"], f["info"], **r.overrides))
        return scores
    states = [r.state for r in rollouts]
    saved = [(s.get("reward"), s.get("metrics")) for s in states]
    if override == "score_group":
        await rubric.score_group(states)
    else:
        for state in states:
            await rubric.score_rollout(state)
    scores = [_read(state) for state in states]
    for state, (reward, metrics) in zip(states, saved):
        state["reward"], state["metrics"] = reward, metrics
    return scores


async def score_states(rubric: Any, states: list[MutableMapping[str, Any]], tuple_era: bool) -> None:
    """Score one example's rollouts as the environment's era did, writing reward, metrics and advantage.

    The tuple era (and any rubric overriding the tuple era's ``score_rollout``) scores each rollout
    through ``rubric.score_rollout(prompt, completion, answer, state, task, info)``, the rollouts at
    once; the State era calls ``rubric.score_group(states)``, overridden or not.
    """
    override = scoring_override(rubric)
    if override != "tuple_score_rollout" and (override == "score_group" or not tuple_era):
        await rubric.score_group(states)
        return
    fields = [RolloutArguments.from_state(state).fields for state in states]
    scores = await asyncio.gather(*(
        rubric.score_rollout(f["prompt"], f["completion"], f["answer"], state, f["task"], f["info"])
        for f, state in zip(fields, states)))
    named = [_as_score(rubric, score) for score in scores]
    for score in named:  # 0.1.x reported every function's name, 0.0 where a score had none
        for name in rubric.get_reward_func_names():
            score.metrics.setdefault(name, 0.0)
    write_scores(states, named, group=True)


def _as_score(rubric: Any, score: Any) -> RolloutScore:
    if isinstance(score, RolloutScore):
        return score
    if isinstance(score, Mapping) and "reward" in score:
        return RolloutScore(reward=score["reward"], metrics=score.get("metrics") or {})
    raise TypeError(f"{type(rubric).__name__}.score_rollout returned {type(score).__name__}, not a RolloutScore")


def _read(state: MutableMapping[str, Any]) -> RolloutScore:
    metrics = state.get("metrics") or {}
    return RolloutScore(reward=float(state.get("reward") or 0.0), metrics={k: float(v) for k, v in metrics.items()})


__all__ = ["Override", "score_states", "score_with_override", "scoring_override"]
