"""Rubric: a weighted list of reward functions that scores rollouts.

Each reward function scores one rollout (or, as a *group* function, every
rollout of one example at once; see :mod:`verifiers.rubrics.injection`). The
reward is the weighted sum of the scores; every raw score is also reported as
a metric under the function's name, so a weight-0 function is a tracked metric::

    def exact(completion, answer) -> float:
        return float(completion[-1]["content"].strip() == answer)

    rubric = vf.Rubric(funcs=[exact], weights=[1.0])
    rubric.add_metric(lambda completion: len(completion))

The rubric is written for the State era: ``await rubric.score_rollout(state)`` and
``await rubric.score_group(states)`` write ``state["reward"]``, ``state["metrics"]``
(and, per group, ``state["advantage"]``). The tuple era's calls,
``await rubric.score_rollout(prompt, completion, answer, state)`` answering a
:class:`~verifiers.types.RolloutScore` and ``score_rollouts`` over parallel lists,
are recognised here by their shape and scored by :mod:`verifiers.compat.scoring`
(this module is the rubric's seam with it).

A reward function that raises scores 0.0, as in classic verifiers, but never
silently: see :meth:`Rubric._record_failure`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from typing import Any, overload

from verifiers.awaitables import maybe_await
from verifiers.compat.scoring import score_parallel_lists, score_tuple_rollout
from verifiers.decorators import cleanup_handlers, teardown_handlers
from verifiers.errors import RewardFunctionError, UsageError
from verifiers.parsers.parser import Parser
from verifiers.rubrics.deadline import DEFAULT_SCORING_TIMEOUT_S, call_reward
from verifiers.rubrics.injection import (
    RolloutArguments,
    ensure_reward_func,
    func_name,
    group_arguments,
    is_group_func,
)
from verifiers.rubrics.scores import add_scoring_time, write_scores
from verifiers.types import Messages, RolloutScore, RolloutScores

# Keyword arguments that public environments pass by mistake; they are kept as
# attributes (as the original did) but deserve a louder hint than a debug line.
_LIKELY_TYPOS = {"reward_functions": "funcs"}
# 0.1.x's names for ``funcs`` and ``weights``: passed as keywords or assigned after ``super().__init__()``,
# they are what a 0.1.x rubric scores with, so here they are the same lists (see the properties below).
_CLASSIC_LISTS = ("reward_funcs", "reward_weights")


class Rubric:
    """A weighted list of reward functions (see the module docstring).

    Args:
        funcs: reward functions; each gets, by parameter name, any of ``prompt``,
            ``completion``, ``answer``, ``state``, ``task``, ``info``, ``example_id``,
            the rubric's class objects (``parser``, ...) and call keyword arguments.
        weights: one weight per function (default 1.0 each).
        parser: offered to reward functions as ``parser`` (default :class:`Parser`).
        parallelize_scoring: run a rollout's functions at once (``True``) or in order
            (``False``). By default (``None``) each era's way: in order for the State era's
            ``score_rollout(state)``/``score_group`` (0.3.0), where a later function may read
            what an earlier one wrote to the state; at once where :mod:`verifiers.compat.scoring`
            scores as 0.1.x did.
        scoring_timeout: seconds one reward function may take for one rollout (a group function: for its
            group) before it is scored 0.0 and counted as failed (``None``: no limit; see
            :mod:`verifiers.rubrics.deadline`, which also runs synchronous functions off the event loop).
        **kwargs: kept as attributes, as classic verifiers did.
    """

    def __init__(
        self,
        funcs: Sequence[Callable[..., Any]] | None = None,
        weights: Sequence[float] | None = None,
        parser: Parser | None = None,
        parallelize_scoring: bool | None = None,
        *,
        scoring_timeout: float | None = DEFAULT_SCORING_TIMEOUT_S,
        **kwargs: Any,
    ) -> None:
        self._setup(parser, parallelize_scoring)
        self.set_scoring_timeout(scoring_timeout)
        funcs = list(funcs or [])
        weights = list(weights or [1.0] * len(funcs))
        if len(weights) != len(funcs):
            raise ValueError(f"got {len(weights)} weights for {len(funcs)} reward functions; give one per function")
        self.funcs: list[Callable[..., Any]] = []
        self.weights: list[float] = []
        for func, weight in zip(funcs, weights):
            self._append(func, weight)
        self._set_extra_attributes(kwargs)
        if not self.weights:  # Rubric(reward_funcs=[...]) alone: weight 1.0 each, as 0.1.x gives
            self.weights = [1.0] * len(self.funcs)

    def _setup(self, parser: Parser | None, parallelize_scoring: bool | None) -> None:
        self.logger = logging.getLogger(f"verifiers.rubrics.{type(self).__name__}")
        self.parser = parser if parser is not None else Parser()
        self.parallelize_scoring = parallelize_scoring
        self.class_objects: dict[str, Any] = {"parser": self.parser}
        self._failure_counts: Counter[str] = Counter()
        self._logged_failures: set[tuple[str, type[BaseException]]] = set()

    def set_scoring_timeout(self, seconds: float | None) -> None:
        """From now on, give each reward function ``seconds`` per rollout (``None``: no limit);
        ``vf-eval --scoring-timeout`` sets it over the environment's own."""
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                                    or not seconds > 0):
            raise UsageError(f"scoring_timeout must be a number of seconds > 0 or None, got {seconds!r}")
        self.scoring_timeout = None if seconds is None else float(seconds)

    def _scoring_timeout(self) -> float | None:
        # a subclass that never called Rubric.__init__ still gets the default
        return getattr(self, "scoring_timeout", DEFAULT_SCORING_TIMEOUT_S)

    def _set_extra_attributes(self, extra: Mapping[str, Any]) -> None:
        for key, value in extra.items():
            cls = type(self).__name__
            if key in _CLASSIC_LISTS:
                setattr(self, key, value)
                continue
            if hasattr(type(self), key):
                raise TypeError(f"{cls}() got an argument {key!r} that would shadow a method or property")
            if key in _LIKELY_TYPOS:
                hint = _LIKELY_TYPOS[key]
                self.logger.warning("%s() got %s=, which it does not use; did you mean %s=?", cls, key, hint)
            setattr(self, key, value)
        if extra:
            self.logger.debug("%s: extra arguments %s kept as attributes", type(self).__name__, sorted(extra))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(funcs={self.get_reward_func_names()}, weights={self.get_reward_weights()})"

    # ----------------------------------------------------------------- registry

    def _append(self, func: Callable[..., Any], weight: float) -> None:
        ensure_reward_func(func)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise TypeError(f"the weight of {func_name(func)!r} must be a number, got {weight!r}")
        self.funcs.append(func)
        self.weights.append(float(weight))

    def add_reward_func(self, func: Callable[..., Any], weight: float = 1.0) -> None:
        """Add a reward function that counts towards the reward with ``weight``."""
        self._append(func, weight)

    def add_metric(self, func: Callable[..., Any], weight: float = 0.0) -> None:
        """Add a function that is reported as a metric (weight 0 by default: no effect on reward)."""
        self._append(func, weight)

    def add_class_object(self, name: str, obj: Any) -> None:
        """Offer ``obj`` to reward functions that have a parameter called ``name``."""
        self.class_objects[name] = obj

    def get_reward_func_names(self) -> list[str]:
        """Metric names, one per function (its ``__name__``)."""
        return [func_name(func) for func in self.funcs]

    def get_reward_funcs(self) -> list[Callable[..., Any]]:
        return list(self.funcs)

    def get_reward_weights(self) -> list[float]:
        """One weight per function. Lists assigned by hand (``self.reward_weights = ...``) may differ in
        length; they pair up as 0.1.x's ``zip`` paired them: extra weights unused, extra functions weight 0."""
        weights = [float(w) for w in self.weights[: len(self.funcs)]]
        return weights + [0.0] * (len(self.funcs) - len(weights))

    @property
    def reward_funcs(self) -> list[Callable[..., Any]]:
        """0.1.x's name for :attr:`funcs`: the same list (appending to it adds a function)."""
        return self.funcs

    @reward_funcs.setter
    def reward_funcs(self, funcs: Sequence[Callable[..., Any]]) -> None:
        for func in funcs:
            ensure_reward_func(func)
        self.funcs = list(funcs)

    @property
    def reward_weights(self) -> list[float]:
        """0.1.x's name for :attr:`weights`: the same list."""
        return self.weights

    @reward_weights.setter
    def reward_weights(self, weights: Sequence[float]) -> None:
        if any(isinstance(w, bool) or not isinstance(w, (int, float)) for w in weights):
            raise TypeError(f"reward weights must be numbers, got {list(weights)!r}")
        self.weights = list(weights)

    @property
    def failure_counts(self) -> Counter[str]:
        """How many scores each function lost to an exception (a group call counts once per rollout)."""
        return self._failure_counts

    # ----------------------------------------------------------------- scoring API

    @overload
    async def score_rollout(self, state: MutableMapping[str, Any], /) -> None: ...

    @overload
    async def score_rollout(
        self,
        prompt: Messages,
        completion: Messages,
        answer: Any,
        state: MutableMapping[str, Any] | None,
        task: str = "default",
        info: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> RolloutScore: ...

    async def score_rollout(
        self,
        prompt: Any = None,
        completion: Any = None,
        answer: Any = "",
        state: MutableMapping[str, Any] | None = None,
        task: str = "default",
        info: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> RolloutScore | None:
        """Score one rollout.

        ``score_rollout(state)`` (State era) writes ``state["reward"]`` and
        ``state["metrics"]`` and returns None. ``score_rollout(prompt, completion,
        answer, state, task, info, **kwargs)`` (tuple era) returns a
        :class:`RolloutScore`. Both record ``state["timing"]["scoring_ms"]``.
        """
        # State era: the one argument is the state, given as prompt or by keyword (the rubric writes into it)
        given_state = prompt if isinstance(prompt, MutableMapping) else state if prompt is None else None
        if completion is None and given_state is not None:
            await self._score_states([given_state], kwargs, group=False)
            return None
        return await score_tuple_rollout(self, prompt, completion, answer, state, task, info, **kwargs)

    async def score_rollouts(
        self,
        prompts: Sequence[Messages],
        completions: Sequence[Messages],
        answers: Sequence[Any],
        states: Sequence[MutableMapping[str, Any]],
        tasks: Sequence[str] | None = None,
        infos: Sequence[dict[str, Any]] | None = None,
        max_concurrent: int = -1,
        apply_weights: bool = True,
        **kwargs: Any,
    ) -> RolloutScores:
        """0.1.x's API: score parallel lists of rollouts, each on its own (at most ``max_concurrent`` at once
        if > 0). With ``apply_weights=False`` each reward is the plain sum of the raw scores."""
        return await score_parallel_lists(self, prompts, completions, answers, states, tasks, infos,
                                          max_concurrent, apply_weights, **kwargs)

    async def score_group(self, states: Sequence[MutableMapping[str, Any]], **kwargs: Any) -> None:
        """Score the rollouts of one example together.

        Writes ``reward``, ``metrics`` and ``advantage`` (reward minus the group's
        mean reward) into each state, and fills the ``reward``/``advantage`` of
        trajectory steps that have none. ``kwargs`` are offered to every function.
        """
        if states:
            await self._score_states(list(states), kwargs, group=True)

    async def _score_states(
        self, states: list[MutableMapping[str, Any]], overrides: dict[str, Any], group: bool, at_once: bool = False
    ) -> None:
        start = time.perf_counter()
        rollouts = [RolloutArguments.from_state(state, overrides) for state in states]
        write_scores(states, await self._scores(rollouts, at_once), group)
        add_scoring_time(states, start)

    # ------------------------------------------------------------------ scoring

    def _runs_concurrently(self, at_once: bool) -> bool:
        """Whether a rollout's functions run at once: as asked, else the caller's way (see ``parallelize_scoring``)."""
        return self.parallelize_scoring if self.parallelize_scoring is not None else at_once

    async def _scores(self, rollouts: list[RolloutArguments], at_once: bool) -> list[RolloutScore]:
        """One score per rollout; each function runs over all the rollouts at once. ``at_once``: the caller's
        default for running a rollout's functions at once (the tuple era's) rather than in order."""
        if self._runs_concurrently(at_once):
            columns = list(await asyncio.gather(*(self._score_func(func, rollouts) for func in self.funcs)))
        else:
            columns = [await self._score_func(func, rollouts) for func in self.funcs]
        return self._combine(columns, len(rollouts))

    def _combine(self, columns: list[list[float]], n: int) -> list[RolloutScore]:
        names, weights = self.get_reward_func_names(), self.get_reward_weights()
        scores = []
        for i in range(n):
            # Two functions with one name (two lambdas) both count towards the reward, but the metric is
            # the later one's, as in both classic eras (a RubricGroup adds up its rubrics' metrics).
            metrics = {name: column[i] for name, column in zip(names, columns)}
            reward = sum(weight * column[i] for weight, column in zip(weights, columns))
            scores.append(RolloutScore(reward=reward, metrics=metrics))
        return scores

    async def _score_func(self, func: Callable[..., Any], rollouts: list[RolloutArguments]) -> list[float]:
        name = func_name(func)
        if is_group_func(func):
            return await self._score_with_group_func(func, name, rollouts)
        return list(await asyncio.gather(*(self._score_with_func(func, name, r) for r in rollouts)))

    # Policy: a reward function that raises scores 0.0 instead of failing the
    # whole run (classic verifiers' behaviour, which environments rely on), but
    # every failure is recorded in the state, counted and logged. Only
    # ``Exception`` is caught: cancellation, KeyboardInterrupt and SystemExit
    # must still stop the run.
    async def _score_with_func(self, func: Callable[..., Any], name: str, rollout: RolloutArguments) -> float:
        try:
            available = rollout.with_objects(self.class_objects)
            return _as_score(name, await call_reward(func, available, self._scoring_timeout()))
        except Exception as exc:
            self._record_failure(name, exc, [rollout.state])
            return 0.0

    async def _score_with_group_func(
        self, func: Callable[..., Any], name: str, rollouts: list[RolloutArguments]
    ) -> list[float]:
        try:
            values = await call_reward(func, group_arguments(rollouts, self.class_objects), self._scoring_timeout())
            if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
                kind = type(values).__name__
                raise RewardFunctionError(f"group reward function {name!r} must return a list of scores, got {kind}")
            scores = [_as_score(name, value) for value in values]
            if len(scores) != len(rollouts):
                counts = f"{len(scores)} scores for {len(rollouts)} rollouts"
                raise RewardFunctionError(f"group reward function {name!r} returned {counts}")
            return scores
        except Exception as exc:
            self._record_failure(name, exc, [r.state for r in rollouts])
            return [0.0] * len(rollouts)

    def _record_failure(self, name: str, exc: Exception, states: Sequence[MutableMapping[str, Any] | None]) -> None:
        """Count the failure, note it in each state, and log it (with traceback once per function and error type)."""
        self._failure_counts[name] += len(states)
        message = f"{type(exc).__name__}: {exc}"
        for state in states:
            if isinstance(state, MutableMapping):
                errors = state.get("scoring_errors")
                if not isinstance(errors, MutableMapping):
                    errors = state["scoring_errors"] = {}
                errors[name] = message
        key = (name, type(exc))
        if key in self._logged_failures:
            self.logger.debug("reward function %r raised %s; scored 0.0", name, message)
            return
        self._logged_failures.add(key)
        self.logger.error(
            "reward function %r raised %s; scored 0.0 (failures are counted in rubric.failure_counts and "
            "state['scoring_errors']; further %s from %r are logged at debug level)",
            name, message, type(exc).__name__, name, exc_info=exc,
        )

    # ---------------------------------------------------------------- lifecycle

    async def cleanup(self, state: MutableMapping[str, Any]) -> None:
        """Run this rubric's ``@vf.cleanup`` methods on a finished rollout's state."""
        for handler in cleanup_handlers(self):
            await maybe_await(handler, state)

    async def teardown(self) -> None:
        """Run this rubric's ``@vf.teardown`` methods once the environment is done."""
        for handler in teardown_handlers(self):
            await maybe_await(handler)


def _as_score(name: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise RewardFunctionError(f"reward function {name!r} returned {value!r}, which is not a number") from None


__all__ = ["Rubric", "write_scores"]
