"""RubricGroup: several rubrics scored as one.

Rewards add up across rubrics, and metrics that share a name add up too, so a
group of a task rubric and a judge rubric reports one reward per rollout::

    rubric = vf.RubricGroup([vf.Rubric(funcs=[exact]), judge_rubric])

The group's names, functions and weights are the concatenation of its
rubrics'. Each rubric injects its own class objects (its own ``parser``,
``judge``, ...). A member whose class overrides ``score_group`` or
``score_rollout`` is scored through that override, as the classic groups did
(:mod:`verifiers.rubrics.overrides`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, MutableMapping, Sequence
from typing import Any

from verifiers.parsers.parser import Parser
from verifiers.rubrics.injection import RolloutArguments
from verifiers.rubrics.overrides import score_with_override, scoring_override
from verifiers.rubrics.rubric import Rubric
from verifiers.types import RolloutScore


class RubricGroup(Rubric):
    """Score with every rubric of ``rubrics`` and sum the results (see the module docstring)."""

    def __init__(
        self,
        rubrics: Sequence[Rubric],
        parser: Parser | None = None,
        parallelize_scoring: bool | None = None,
        **kwargs: Any,
    ) -> None:
        rubrics = list(rubrics or [])
        if not rubrics:
            raise ValueError("RubricGroup needs at least one rubric")
        for rubric in rubrics:
            if not isinstance(rubric, Rubric):
                raise TypeError(f"RubricGroup takes Rubric instances, got {type(rubric).__name__}")
        self.rubrics = rubrics
        self._setup(parser, parallelize_scoring)
        self._set_extra_attributes(kwargs)

    # The group owns no functions of its own: these are views of its rubrics' lists, and setting one is refused.
    @property
    def funcs(self) -> list[Callable[..., Any]]:
        return self.get_reward_funcs()

    @funcs.setter
    def funcs(self, value: list[Callable[..., Any]]) -> None:
        raise AttributeError("a RubricGroup's reward functions are its rubrics': change a member rubric instead")

    @property
    def weights(self) -> list[float]:
        return self.get_reward_weights()

    @weights.setter
    def weights(self, value: list[float]) -> None:
        raise AttributeError("a RubricGroup's weights are its rubrics': change a member rubric instead")

    def get_reward_func_names(self) -> list[str]:
        return [name for rubric in self.rubrics for name in rubric.get_reward_func_names()]

    def get_reward_funcs(self) -> list[Callable[..., Any]]:
        return [func for rubric in self.rubrics for func in rubric.get_reward_funcs()]

    def get_reward_weights(self) -> list[float]:
        return [weight for rubric in self.rubrics for weight in rubric.get_reward_weights()]

    def add_reward_func(self, func: Callable[..., Any], weight: float = 1.0) -> None:
        """Add ``func`` to the first rubric of the group (with a warning: the target is implicit)."""
        self.logger.warning("RubricGroup.add_reward_func adds %r to its first rubric", getattr(func, "__name__", func))
        self.rubrics[0].add_reward_func(func, weight)

    def add_metric(self, func: Callable[..., Any], weight: float = 0.0) -> None:
        """Add a metric to the first rubric of the group (with a warning, as :meth:`add_reward_func`)."""
        self.logger.warning("RubricGroup.add_metric adds %r to its first rubric", getattr(func, "__name__", func))
        self.rubrics[0].add_metric(func, weight)

    def add_class_object(self, name: str, obj: Any) -> None:
        """Offer ``obj`` to the reward functions of every rubric in the group."""
        super().add_class_object(name, obj)
        for rubric in self.rubrics:
            rubric.add_class_object(name, obj)

    def set_scoring_timeout(self, seconds: float | None) -> None:
        """The deadline of every member rubric's functions (the group scores through its members)."""
        super().set_scoring_timeout(seconds)
        for rubric in self.rubrics:
            rubric.set_scoring_timeout(seconds)

    @property
    def failure_counts(self) -> Counter[str]:
        """Failures of every rubric in the group, added up by function name."""
        total: Counter[str] = Counter()
        for rubric in self.rubrics:
            total.update(rubric.failure_counts)
        return total

    async def _scores(self, rollouts: list[RolloutArguments], at_once: bool) -> list[RolloutScore]:
        # Rubrics run one after another, as in both classic eras; within one, its own policy decides
        # (a JudgeRubric is sequential by default either way, to spare the judge's rate limit).
        totals = [RolloutScore(reward=0.0, metrics={}) for _ in rollouts]
        for rubric in self.rubrics:
            override = scoring_override(rubric)
            if override is not None:
                scores = await score_with_override(rubric, override, rollouts)
            else:
                scores = await rubric._scores(rollouts, at_once)
            for total, score in zip(totals, scores):
                total.reward += score.reward
                for name, value in score.metrics.items():
                    total.metrics[name] = total.metrics.get(name, 0.0) + value  # one name in two rubrics adds up
        return totals

    async def cleanup(self, state: MutableMapping[str, Any]) -> None:
        await super().cleanup(state)
        for rubric in self.rubrics:
            await rubric.cleanup(state)

    async def teardown(self) -> None:
        await super().teardown()
        for rubric in self.rubrics:
            await rubric.teardown()


__all__ = ["RubricGroup"]
