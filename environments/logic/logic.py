"""Logic: procedurally generated reasoning puzzles from reasoning-gym, scored by reasoning-gym's own checkers.

Ten task types by default (knights and knaves, syllogisms, self-referential statements, logic circuits, 4x4
sudoku, mazes, family relations, course schedules, n-queens, "Alice in Wonderland" counting questions), mixed
in equal shares and generated from ``seed``, so the same arguments give the same puzzles. A good answer
reasons first, then puts only the final answer inside ``<answer>...</answer>``, in the format the puzzle asks
for; reasoning-gym's checker for the puzzle's task scores it (1.0 for a right answer; some tasks give partial
credit). Difficulty is each task's own reasoning-gym configuration (``task_config``).

Train and eval puzzles come from one generated sequence (train first); an eval puzzle whose question also
occurs among the training puzzles is dropped, so no prompt is in both splits and the eval split may hold a
few fewer rows than asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import verifiers as vf
from verifiers.errors import UsageError

TASKS = (
    "knights_knaves",
    "syllogism",
    "self_reference",
    "circuit_logic",
    "mini_sudoku",
    "maze",
    "family_relationships",
    "course_schedule",
    "n_queens",
    "aiw",
)


def load_environment(
    tasks: Sequence[str] = TASKS,
    task_config: Mapping[str, Mapping[str, Any]] | None = None,
    num_train_examples: int = 1000,
    num_eval_examples: int = 200,
    seed: int = 0,
) -> vf.Environment:
    """Build the logic environment.

    Args:
        tasks: reasoning-gym task names, mixed in equal shares (default: the ten in ``TASKS``).
        task_config: per task, reasoning-gym configuration fields that set its difficulty, e.g.
            ``{"maze": {"min_dist": 10, "max_dist": 20}, "n_queens": {"n": 6}}``.
        num_train_examples: puzzles in the training split (at least 1).
        num_eval_examples: puzzles generated for the eval split, before repeats of training puzzles are dropped.
        seed: the generator's seed.

    Example::

        env = load_environment(tasks=["maze", "knights_knaves"], task_config={"knights_knaves": {"n_people": 3}})
    """
    chosen = _check_tasks(tasks)
    configs = _check_task_config(task_config, chosen)
    for name, value in (("num_train_examples", num_train_examples), ("num_eval_examples", num_eval_examples)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise UsageError(f"{name} must be a positive integer; got {value!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise UsageError(f"seed must be an integer; got {seed!r}")
    gym = [{"name": task, "weight": 1.0, "config": dict(configs.get(task, {}))} for task in chosen]
    try:
        env = vf.ReasoningGymEnv(gym=gym, num_train_examples=num_train_examples,
                                 num_eval_examples=num_eval_examples, seed=seed)
    except (TypeError, ValueError, AssertionError) as exc:
        # reasoning-gym checks its configs with dataclass fields and asserts: a wrong field or value lands here.
        reason = f"{type(exc).__name__}: {exc}"
        raise UsageError(f"reasoning-gym refused the task configuration {configs!r}: {reason}") from exc
    training = set(env.get_dataset()["question"])
    env.eval_dataset = env.get_eval_dataset().filter(lambda row: row["question"] not in training)
    return env


def _check_tasks(tasks: Any) -> tuple[str, ...]:
    from reasoning_gym.factory import DATASETS  # reasoning-gym's registry of task names

    chosen = (tasks,) if isinstance(tasks, str) else tasks
    if not isinstance(chosen, list | tuple) or not chosen or not all(isinstance(t, str) for t in chosen):
        raise UsageError(f"tasks must be a non-empty list of reasoning-gym task names; got {tasks!r}")
    unknown = [t for t in chosen if t not in DATASETS or t == "composite"]
    if unknown:
        raise UsageError(f"unknown reasoning-gym task(s) {unknown!r}; the defaults are {', '.join(TASKS)}")
    return tuple(dict.fromkeys(chosen))


def _check_task_config(task_config: Any, tasks: tuple[str, ...]) -> dict[str, Mapping[str, Any]]:
    if task_config is None:
        return {}
    if not isinstance(task_config, Mapping) or not all(isinstance(v, Mapping) for v in task_config.values()):
        raise UsageError(f"task_config maps task names to dicts of config fields; got {task_config!r}")
    stray = [t for t in task_config if t not in tasks]
    if stray:
        raise UsageError(f"task_config names task(s) {stray!r} that are not in tasks {list(tasks)!r}")
    return dict(task_config)
