"""The tuple era's scoring, on the State-era rubric core.

0.1.x scored one rollout at a time, ``rubric.score_rollout(prompt, completion, answer, state, task,
info)`` answering a :class:`~verifiers.types.RolloutScore`, with every reward function of a rollout
running at once; ``score_rollouts`` took parallel lists. A rubric subclass of that era may override
``score_rollout`` in that shape, and both eras' environments and ``RubricGroup`` call such an override
wherever they score. The core (:class:`~verifiers.rubrics.rubric.Rubric`,
:mod:`verifiers.rubrics.overrides`) hands each of these here, and scores from its functions otherwise.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, MutableMapping, Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from verifiers.rubrics.injection import RolloutArguments
from verifiers.rubrics.scores import add_scoring_time, write_scores
from verifiers.types import Messages, RolloutScore, RolloutScores

if TYPE_CHECKING:
    from verifiers.rubrics.rubric import Rubric


async def score_tuple_rollout(rubric: Rubric, prompt: Messages, completion: Messages, answer: Any,
                              state: MutableMapping[str, Any] | None, task: str = "default",
                              info: dict[str, Any] | None = None, **kwargs: Any) -> RolloutScore:
    """0.1.x's ``score_rollout``: one rollout from its fields; the functions run at once unless the
    rubric asks otherwise (``parallelize_scoring=False``). Records ``state["timing"]["scoring_ms"]``."""
    info = {} if info is None else info
    fields = dict(prompt=prompt, completion=completion, answer=answer, state=state, task=task, info=info)
    start = time.perf_counter()
    [score] = await rubric._scores([RolloutArguments(fields, kwargs, state)], at_once=True)
    add_scoring_time([state], start)
    return score


async def score_parallel_lists(rubric: Rubric, prompts: Sequence[Messages], completions: Sequence[Messages],
                               answers: Sequence[Any], states: Sequence[MutableMapping[str, Any]],
                               tasks: Sequence[str] | None = None, infos: Sequence[dict[str, Any]] | None = None,
                               max_concurrent: int = -1, apply_weights: bool = True, **kwargs: Any) -> RolloutScores:
    """0.1.x's ``score_rollouts``: each rollout of parallel lists scored on its own (``max_concurrent`` at
    most at once when > 0); with ``apply_weights=False`` a reward is the plain sum of its raw scores."""
    n = len(prompts)
    tasks = ["default"] * n if tasks is None else tasks
    infos = [{}] * n if infos is None else infos
    columns = {"completions": completions, "answers": answers, "states": states, "tasks": tasks, "infos": infos}
    for label, values in columns.items():
        if len(values) != n:
            raise ValueError(f"score_rollouts got {n} prompts but {len(values)} {label}; lists must be parallel")
    limit = asyncio.Semaphore(max_concurrent) if max_concurrent > 0 else None

    async def score(i: int) -> RolloutScore:
        async with limit or nullcontext():
            rollout = (prompts[i], completions[i], answers[i], states[i], tasks[i], infos[i])
            return await rubric.score_rollout(*rollout, **kwargs)

    scores = list(await asyncio.gather(*(score(i) for i in range(n))))
    if not apply_weights:
        scores = [RolloutScore(reward=sum(s.metrics.values()), metrics=s.metrics) for s in scores]
    names = list(dict.fromkeys([*rubric.get_reward_func_names(), *(k for s in scores for k in s.metrics)]))
    return RolloutScores(
        reward=[s.reward for s in scores],
        metrics={name: [s.metrics.get(name, 0.0) for s in scores] for name in names},
    )


async def score_through_tuple_override(rubric: Any, rollouts: list[RolloutArguments]) -> list[RolloutScore]:
    """Each rollout scored by the rubric's own ``score_rollout(prompt, completion, ...)`` override (all at once)."""
    scores = await asyncio.gather(*(_tuple_call(rubric, r) for r in rollouts))
    return [_as_score(rubric, score) for score in scores]


async def score_group_through_tuple_override(rubric: Any, states: list[MutableMapping[str, Any]]) -> None:
    """One example's rollouts scored each by the rubric's tuple-shaped ``score_rollout`` override, written into
    the states with every function's name reported (0.0 where a score had none), as 0.1.x reported them."""
    scores = await score_through_tuple_override(rubric, [RolloutArguments.from_state(s) for s in states])
    for score in scores:
        for name in rubric.get_reward_func_names():
            score.metrics.setdefault(name, 0.0)
    write_scores(states, scores, group=True)


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


__all__ = [
    "score_group_through_tuple_override", "score_parallel_lists", "score_through_tuple_override", "score_tuple_rollout",
]
