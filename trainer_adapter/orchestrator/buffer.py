"""The difficulty buffer: which problems to ask next, and which finished groups are worth training.

Every example starts ``normal``. When a group of it finishes, its mean reward files the
example as ``easy`` (≥ ``easy_threshold``), ``hard`` (≤ ``hard_threshold``) or ``normal``;
``sample_problems`` then draws ``easy_fraction`` / ``hard_fraction`` of each request from
those pools and the rest from ``normal``. With several environments (an ``EnvGroup``, each
example labelled by its ``task``), ``task_weights`` first picks the environment of each
draw by weight, then the pools above pick within it. A group whose rewards are all equal has zero
advantage everywhere, so it would spend trainer time on no gradient: it is dropped (and
counted). With ``online_filter`` a group that lands in the easy or hard pool is dropped
as well. Dropping costs extra inference, never a smaller batch: the orchestrator keeps
generating until enough rollouts were accepted.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainer_adapter.orchestrator.rollouts import RolloutGroup

Difficulty = Literal["easy", "normal", "hard"]


class BufferConfig(BaseModel):
    """Difficulty pools and filters."""

    model_config = ConfigDict(extra="forbid")

    easy_threshold: float | None = Field(
        None, description="A group with mean reward >= this files its example as easy (None: never)."
    )
    hard_threshold: float | None = Field(
        None, description="A group with mean reward <= this files its example as hard (None: never)."
    )
    easy_fraction: float = Field(0.0, ge=0, le=1, description="Share of sampled problems drawn from the easy pool.")
    hard_fraction: float = Field(0.0, ge=0, le=1, description="Share of sampled problems drawn from the hard pool.")
    drop_uniform_groups: bool = Field(
        True, description="Drop groups whose rewards are all equal (zero advantage, no gradient)."
    )
    online_filter: bool = Field(False, description="Also drop groups that land in the easy or hard pool.")

    @model_validator(mode="after")
    def _consistent(self) -> BufferConfig:
        if self.easy_fraction + self.hard_fraction > 1:
            raise ValueError("easy_fraction + hard_fraction must be at most 1")
        if self.easy_threshold is not None and self.hard_threshold is not None:
            if self.hard_threshold >= self.easy_threshold:
                raise ValueError("hard_threshold must be below easy_threshold")
        return self


class DifficultyBuffer:
    """Difficulty pools over example ids, plus the accepted groups waiting for the trainer."""

    def __init__(self, example_ids: Sequence[int], config: BufferConfig, seed: int = 0,
                 tasks: Mapping[int, str] | None = None, task_weights: Mapping[str, float] | None = None) -> None:
        """``tasks`` labels each example id with its environment; ``task_weights`` mixes them (None: by count)."""
        if not example_ids:
            raise ValueError("the buffer needs at least one example id")
        self.config = config
        self.difficulty: dict[int, Difficulty] = {int(i): "normal" for i in example_ids}
        self.tasks: dict[int, str] = {i: (tasks or {}).get(i, "default") for i in self.difficulty}
        """Each example's environment (its ``task``)."""
        self._by_task = _ids_by_task(self.difficulty, self.tasks, task_weights)
        self._task_weights = dict(task_weights or {})
        self.groups: list[RolloutGroup] = []
        self.filtered: Counter[str] = Counter()
        """Dropped groups by reason: ``uniform``, ``easy``, ``hard``."""
        self.rng = random.Random(seed)
        """Draws the problems; the orchestrator saves and restores its state for ``--resume``."""

    # -- problems ---------------------------------------------------------------------

    def sample_problems(self, n: int) -> list[int]:
        """``n`` example ids: the configured shares from the easy and hard pools, the rest from normal.

        Draws are uniform with replacement within a pool; an empty pool's share comes from
        ``normal``, and from all examples when ``normal`` is empty too. With task weights,
        each draw's environment is picked by weight first and the pools are that environment's.
        """
        if not self._task_weights:
            return self._sample(n, sorted(self.difficulty))
        names = sorted(self._task_weights)
        counts = Counter(self.rng.choices(names, [self._task_weights[t] for t in names], k=n))
        picked = [i for name in names for i in self._sample(counts[name], self._by_task[name])]
        self.rng.shuffle(picked)
        return picked

    def _sample(self, n: int, ids: list[int]) -> list[int]:
        n_easy = round(n * self.config.easy_fraction)
        n_hard = round(n * self.config.hard_fraction)
        wanted: dict[Difficulty, int] = {"easy": n_easy, "hard": n_hard, "normal": n - n_easy - n_hard}
        pools = self.pools(ids)
        for name in ("easy", "hard"):
            if not pools[name]:
                wanted["normal"] += wanted[name]
                wanted[name] = 0
        fallback = pools["normal"] or ids
        picked: list[int] = []
        for difficulty in ("easy", "hard", "normal"):
            pool = pools[difficulty] if difficulty != "normal" else fallback
            picked.extend(self.rng.choices(pool, k=wanted[difficulty]))
        return picked

    def pools(self, ids: Sequence[int] | None = None) -> dict[Difficulty, list[int]]:
        """Example ids (all, or those in ``ids``) by difficulty, each sorted."""
        out: dict[Difficulty, list[int]] = {"easy": [], "normal": [], "hard": []}
        for example_id in sorted(self.difficulty if ids is None else ids):
            out[self.difficulty[example_id]].append(example_id)
        return out

    # -- groups -----------------------------------------------------------------------

    def add(self, group: RolloutGroup) -> bool:
        """File ``group``'s example by difficulty, then keep the group unless a filter drops it."""
        level = self._classify(group.mean_reward)
        self.difficulty[group.example_id] = level
        if self.config.drop_uniform_groups and len(set(group.rewards)) <= 1:
            self.filtered["uniform"] += 1
            return False
        if self.config.online_filter and level != "normal":
            self.filtered[level] += 1
            return False
        self.groups.append(group)
        return True

    def pop(self, max_rollouts: int) -> list[RolloutGroup]:
        """The newest whole groups that fit in ``max_rollouts`` rollouts, newest first.

        Newest first because they are the least off-policy; groups left behind age out
        through the staleness filter.
        """
        taken: list[RolloutGroup] = []
        total = 0
        while self.groups and total + len(self.groups[-1].rollouts) <= max_rollouts:
            group = self.groups.pop()
            total += len(group.rollouts)
            taken.append(group)
        return taken

    @property
    def num_rollouts(self) -> int:
        return sum(len(g.rollouts) for g in self.groups)

    def _classify(self, mean_reward: float) -> Difficulty:
        if self.config.easy_threshold is not None and mean_reward >= self.config.easy_threshold:
            return "easy"
        if self.config.hard_threshold is not None and mean_reward <= self.config.hard_threshold:
            return "hard"
        return "normal"

    # -- checkpointing ----------------------------------------------------------------

    def state_dict(self) -> dict[str, object]:
        """The difficulty pools and filter counts (JSON-safe); waiting groups are not kept."""
        return {"difficulty": {str(k): v for k, v in self.difficulty.items()}, "filtered": dict(self.filtered)}

    def load_state_dict(self, state: dict[str, object]) -> None:
        difficulty = state.get("difficulty") or {}
        assert isinstance(difficulty, dict)
        self.difficulty.update({int(k): v for k, v in difficulty.items()})
        filtered = state.get("filtered") or {}
        assert isinstance(filtered, dict)
        self.filtered = Counter({str(k): int(v) for k, v in filtered.items()})


def _ids_by_task(ids: Mapping[int, object], tasks: Mapping[int, str],
                 weights: Mapping[str, float] | None) -> dict[str, list[int]]:
    """Example ids per weighted task; every weight must be positive and name a task that has examples."""
    by_task: dict[str, list[int]] = {}
    for example_id in sorted(ids):
        by_task.setdefault(tasks.get(example_id, "default"), []).append(example_id)
    for name, weight in (weights or {}).items():
        if name not in by_task:
            raise ValueError(f"task weight for {name!r}, but no example has that task (tasks: {sorted(by_task)})")
        if not weight > 0:
            raise ValueError(f"task weight for {name!r} must be > 0, got {weight}")
    return by_task


__all__ = ["BufferConfig", "Difficulty", "DifficultyBuffer"]
