"""The run's environments: one by module name, or several mixed by sampling weight in an ``EnvGroup``.

Each entry is loaded with ``vf.load_environment(id, **args)``. Several entries become one
``vf.EnvGroup`` whose rows carry their environment's name as ``task``; the orchestrator then
draws each problem's environment by ``weight`` (normalised over the entries) before the
difficulty pools pick within it, so a 3:1 mix asks three problems of the first environment
for every one of the second whatever the sizes of their datasets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

import verifiers as vf
from trainer_adapter.errors import TrainerConfigError


class EnvConfig(BaseModel):
    """One environment to train on."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(None, description="Environment id, as vf.load_environment takes it.")
    args: dict[str, Any] = Field(default_factory=dict, description="Arguments for the environment's loader.")
    weight: float = Field(1.0, gt=0, description="Sampling weight among several environments (normalised).")
    name: str | None = Field(
        None, description="Name of the environment in a mix (the task its rows get, the key of reward/<name>); "
        "default: its id."
    )

    @property
    def task_name(self) -> str:
        """The environment's name in a mix."""
        return self.name or str(self.id)


def load_env_mix(entries: Sequence[EnvConfig]) -> tuple[Any, dict[str, float] | None]:
    """The environment to train on and the task weights to sample it with (None for a single environment).

    Raises:
        TrainerConfigError: an entry has no id, names repeat, an environment is not installed, or its
            loader refuses its args; the message names the entry (``envs.<i>``) and why.
    """
    if not entries or any(e.id is None for e in entries):
        raise TrainerConfigError("every environment needs an id")
    if len(entries) == 1:
        return _load(entries[0], "env"), None
    names = [e.task_name for e in entries]
    if len(set(names)) != len(names):
        raise TrainerConfigError(f"environment names must be unique in a mix, got {names}; set name = ... on each")
    envs = [_load(e, f"envs.{i}") for i, e in enumerate(entries)]
    # EnvGroup relabels every row's task with its environment's name, so the names need not match
    # whatever task labels the environments put on their own rows; the weights key on the same names.
    return vf.EnvGroup(envs, env_names=names), {e.task_name: e.weight for e in entries}


def _load(entry: EnvConfig, where: str) -> Any:
    try:
        env = vf.load_environment(str(entry.id), **entry.args)
    except (vf.errors.EnvironmentNotFoundError, vf.errors.EnvironmentLoadError, vf.errors.UsageError) as e:
        # Chained, not swallowed: the loader's own traceback stays on __cause__ for a real bug inside it.
        raise TrainerConfigError(f"{where} ({entry.id!r}): {e}") from e
    if getattr(env, "dataset", None) is None:
        # Evaluation-only benchmarks (math500, humaneval) build no training split on purpose.
        raise TrainerConfigError(
            f"{where} ({entry.id!r}) has no training dataset: it is built for evaluation only. Train on an "
            "environment with a training split; its README says whether an argument allows training on its "
            "eval rows"
        )
    return env


__all__ = ["EnvConfig", "load_env_mix"]
