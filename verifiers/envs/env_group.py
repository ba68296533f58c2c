"""``EnvGroup``: several environments behind one, routed by each row's ``task``.

The group owns the ``task`` column: every row of a member's dataset is labelled
with that member's name, whatever ``task`` the member's own rows carried (the
bundled environments label theirs, e.g. ``"arithmetic"``), as the originals'
later releases do. Routing then needs no agreement between a member's labels
and the names it is given, and a row whose task names no member is an error,
not a rollout on the first member that silently scores 0.
"""

from __future__ import annotations

import json
import logging
from collections.abc import MutableMapping, Sequence
from typing import Any, overload

from datasets import Dataset

from verifiers.envs.dataset import rows_from_inputs
from verifiers.envs.environment import Environment
from verifiers.errors import UsageError
from verifiers.rubrics.rubric import Rubric
from verifiers.state import State
from verifiers.types import GenerateOutputs, Messages, RolloutScore

logger = logging.getLogger("verifiers.envs.EnvGroup")


class EnvGroupRubric(Rubric):
    """Scores each rollout with its own environment's rubric.

    The metric names are the sorted union of every sub-rubric's names; a metric
    that does not apply to a rollout's environment is filled with 0.0 so every
    rollout reports the same columns. An unknown task scores 0 with a warning.
    """

    def __init__(self, env_map: dict[str, Environment]) -> None:
        super().__init__()
        self.env_map = env_map
        names: set[str] = set()
        for env in env_map.values():
            names.update(env.rubric.get_reward_func_names())
        self.all_metric_names = sorted(names)

    def get_reward_func_names(self) -> list[str]:
        return list(self.all_metric_names)

    def _fill(self, metrics: dict[str, float] | None) -> dict[str, float]:
        return {name: float((metrics or {}).get(name, 0.0)) for name in self.all_metric_names}

    async def score_group(self, states: Sequence[MutableMapping[str, Any]], **kwargs: Any) -> None:
        by_task: dict[str, list[MutableMapping[str, Any]]] = {}
        for state in states:
            by_task.setdefault(state.get("task", "default"), []).append(state)
        for task, group in by_task.items():
            env = self.env_map.get(task)
            if env is None:
                logger.warning("no environment for task %r; scoring 0", task)
                for state in group:
                    state["reward"], state["metrics"], state["advantage"] = 0.0, self._fill(None), 0.0
                continue
            await env.rubric.score_group(group, **kwargs)
            for state in group:
                state["metrics"] = self._fill(state.get("metrics"))

    @overload
    async def score_rollout(self, state: MutableMapping[str, Any], /) -> None: ...

    @overload
    async def score_rollout(
        self, prompt: Messages, completion: Messages, answer: Any, state: MutableMapping[str, Any] | None,
        task: str = "default", info: dict[str, Any] | None = None, **kwargs: Any,
    ) -> RolloutScore: ...

    async def score_rollout(
        self, prompt: Any = None, completion: Any = None, answer: Any = "",
        state: MutableMapping[str, Any] | None = None, task: str = "default", info: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> RolloutScore | None:
        """``score_rollout(state)`` scores it as a group of one; the tuple era's ``score_rollout(prompt,
        completion, answer, state, task, info)`` answers the ``task``'s environment's RolloutScore."""
        if isinstance(prompt, MutableMapping) and completion is None:
            await self.score_group([prompt])
            return None
        env = self.env_map.get(task)
        if env is None:
            logger.warning("no environment for task %r; scoring 0", task)
            return RolloutScore(reward=0.0, metrics=self._fill(None))
        score = await env.rubric.score_rollout(prompt, completion, answer, state, task, info, **kwargs)
        return RolloutScore(reward=score.reward, metrics=self._fill(score.metrics))


class EnvGroup(Environment):
    """A mixture of environments; each row's ``task`` names the one that runs and scores it.

    The group's ``dataset`` and ``eval_dataset`` concatenate the members' datasets,
    each row's ``task`` set to its member's name (a member's own ``task`` labels are
    replaced, so reward functions that read ``task`` see the member's name) and
    ``example_id`` renumbered across the whole group. Rows handed to ``rollout``,
    ``generate`` or ``score_group`` directly must carry one of ``env_names`` as their
    ``task``; any other raises :class:`~verifiers.errors.UsageError`.

    Args:
        envs: the environments.
        env_names: their names (the ``task`` values); default ``env_0``, ``env_1``, ...

    Example::

        group = vf.EnvGroup([math_env, code_env], env_names=["math", "code"])
        group.get_dataset()["task"]  # ["math", ..., "code", ...]
    """

    def __init__(self, envs: list[Environment], env_names: list[str] | None = None, **kwargs: Any) -> None:
        if not envs:
            raise ValueError("EnvGroup needs at least one environment")
        names = list(env_names or [f"env_{i}" for i in range(len(envs))])
        if len(names) != len(envs) or len(set(names)) != len(names):
            raise ValueError("env_names must be unique and as many as envs")
        self.envs = list(envs)
        self.env_names = names
        self.env_map = dict(zip(names, envs))
        kwargs.setdefault("dataset", _concat(names, [e.dataset for e in envs]))
        kwargs.setdefault("eval_dataset", _concat(names, [e.eval_dataset for e in envs]))
        kwargs.setdefault("rubric", EnvGroupRubric(self.env_map))
        super().__init__(**kwargs)

    def get_env_for_task(self, task: str) -> Environment:
        """The member named ``task``.

        Raises:
            UsageError: ``task`` names no member. (The originals fell back to the first
                member, which then ran a problem that was not its own and scored it 0.)
        """
        env = self.env_map.get(task)
        if env is None:
            raise UsageError(
                f"EnvGroup has no environment for task {task!r}; its environments are {self.env_names}. "
                "The group labels the rows of its own datasets; rows passed in directly need one of these "
                "names as their 'task'"
            )
        return env

    def set_max_retries(self, max_retries: int) -> None:
        """The group's and every member's retries (members make the model calls)."""
        super().set_max_retries(max_retries)
        for env in self.envs:
            env.set_max_retries(max_retries)

    def set_scoring_timeout(self, seconds: float | None) -> None:
        """Every member's reward functions get ``seconds`` per rollout (members score their own rollouts)."""
        super().set_scoring_timeout(seconds)
        for env in self.envs:
            env.set_scoring_timeout(seconds)

    async def rollout(self, *args: Any, **kwargs: Any) -> Any:
        """Dispatch to the environment named by the row's task (either call form)."""
        if args and isinstance(args[0], dict):
            task = args[0].get("task", "default")
        elif isinstance(kwargs.get("input"), dict):
            task = kwargs["input"].get("task", "default")
        else:
            task = kwargs.get("task", args[4] if len(args) > 4 else "default")
        return await self.get_env_for_task(task).rollout(*args, **kwargs)

    async def generate(self, inputs: Any, client: Any, model: str, sampling_args: dict[str, Any] | None = None,
                       **kwargs: Any) -> GenerateOutputs:
        """Check every row's task before the first model call, then generate as any environment does.

        A bad row would otherwise fail only when its rollout starts, after other rows
        had already spent model calls.
        """
        rows = rows_from_inputs(inputs)
        for task in dict.fromkeys(row["task"] for row in rows):
            self.get_env_for_task(task)
        return await super().generate(rows, client, model, sampling_args, **kwargs)

    a_generate = generate

    async def score_group(self, states: list[State]) -> None:
        """Each group goes to its own environment, which scores it with its rubric and monitors.

        Each rollout then reports only its environment's metrics (0.3.0); the
        rubric's ``score_group`` keeps 0.1.x's zero-filled union (and its score of 0
        for an unknown task) for direct callers. A state whose task names no member
        raises :class:`~verifiers.errors.UsageError`, as in :meth:`get_env_for_task`.
        """
        by_task: dict[str, list[State]] = {}
        for state in states:
            by_task.setdefault(state.get("task", "default"), []).append(state)
        for task, group in by_task.items():
            await self.get_env_for_task(task).score_group(group)

    async def teardown(self) -> None:
        for env in self.envs:
            await env.teardown()


def _concat(names: list[str], datasets: list[Dataset | None]) -> Dataset | None:
    """The members' rows in order, each labelled with its member's name and renumbered."""
    rows: list[dict[str, Any]] = []
    for name, dataset in zip(names, datasets):
        for row in dataset or []:
            rows.append({
                "prompt": row["prompt"],
                "answer": row.get("answer", ""),
                # The member's name, never the row's own label: routing must not depend on members
                # labelling their rows with the names the group happens to give them.
                "task": name,
                # JSON keeps differently-shaped info dicts from fighting over one Arrow schema.
                "info": json.dumps(row.get("info") or {}),
            })
    if not rows:
        return None
    for index, row in enumerate(rows):
        row["example_id"] = index
    return Dataset.from_list(rows)


__all__ = ["EnvGroup", "EnvGroupRubric"]
