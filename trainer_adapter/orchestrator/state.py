"""The orchestrator's state at a checkpointed step: what ``vf-train rl --resume`` needs to continue its data.

``OUTPUT/orchestrator_state/step_<k>.json`` is written when the orchestrator has chosen batch k − 1 and
before that batch is handed to the trainer, so whenever the trainer has a checkpoint at step k the
orchestrator has the matching state. It holds:

- ``step``: the next batch to write (k);
- the problem sampler's RNG position and the examples that were being generated (asked again first
  after a resume, so the problems come in the order an uninterrupted run asks them);
- the difficulty pools, the filter counts and the orchestrator's counters (the metrics keep counting);
- the finished groups still waiting for a batch, with the weights version that made them (on resume the
  ones more than ``max_off_policy_steps`` behind step k are dropped and counted as stale).

The file is JSON (the waiting groups' logprobs may be ``-Infinity``, which ``json`` keeps and pydantic's
serialiser would turn into ``null``), validated by :class:`OrchestratorState`, written under a temporary
name and renamed into place: a ``kill -9`` leaves the previous file or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from trainer_adapter.errors import CheckpointError
from trainer_adapter.orchestrator.buffer import Difficulty
from trainer_adapter.orchestrator.rollouts import Rollout, RolloutGroup
from trainer_adapter.run_folder import numbered_steps
from verifiers.tokens import TrainingSample

STATE_FORMAT: Final = 1
"""Bumped whenever a field changes meaning; a file of another format is refused, not guessed at."""


class OrchestratorState(BaseModel):
    """Everything the orchestrator needs to write batch ``step`` onward as an uninterrupted run would."""

    model_config = ConfigDict(extra="forbid")

    format: Literal[1] = Field(STATE_FORMAT, description="Version of this file's layout.")
    step: int = Field(ge=0, description="The next batch to write.")
    sampler_rng: tuple[int, list[int], float | None] = Field(
        description="The problem sampler's random.Random state (getstate()).")
    pending_examples: list[int] = Field(
        default_factory=list, description="Examples being generated when the state was saved, in dispatch order.")
    difficulty: dict[int, Difficulty] = Field(description="Each example's pool.")
    filtered: dict[str, int] = Field(default_factory=dict, description="Dropped groups by reason.")
    counts: dict[str, int] = Field(default_factory=dict, description="The orchestrator's cumulative counters.")
    fruitless: int = Field(0, ge=0, description="Groups in a row that gave the batch nothing.")
    next_client: int = Field(0, ge=0, description="The server the next group goes to (round robin).")
    waiting_groups: list[dict[str, Any]] = Field(
        default_factory=list, description="Finished groups not yet in a batch, oldest first (group_to_dict).")


def state_dir(root: Path) -> Path:
    """Where a run's orchestrator states live."""
    return root / "orchestrator_state"


def state_path(root: Path, step: int) -> Path:
    """The state file of ``step``."""
    return state_dir(root) / f"step_{step}.json"


def state_steps(root: Path) -> list[int]:
    """Steps that have a state file, ascending."""
    return [s for s in numbered_steps(state_dir(root)) if state_path(root, s).is_file()]


def save_state(root: Path, state: OrchestratorState) -> Path:
    """Write ``state`` to its step's file atomically (temporary file, fsync, rename)."""
    final = state_path(root, state.step)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".{final.name}.tmp-{os.getpid()}"
    with tmp.open("w") as f:
        json.dump(state.model_dump(), f)
        f.flush()
        os.fsync(f.fileno())  # the rename must not reach the disk before the contents do
    os.replace(tmp, final)
    return final


def load_state(path: Path) -> OrchestratorState:
    """Read and validate a state file; :class:`CheckpointError` says what is wrong with it."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise CheckpointError(f"no orchestrator state at {path}") from None
    except json.JSONDecodeError as e:
        raise CheckpointError(f"orchestrator state {path} is not valid JSON: {e}") from None
    if isinstance(data, dict) and data.get("format") != STATE_FORMAT:
        raise CheckpointError(f"orchestrator state {path} has format {data.get('format')!r}; this version reads "
                              f"format {STATE_FORMAT} only")
    try:
        return OrchestratorState.model_validate(data)
    except ValidationError as e:
        raise CheckpointError(f"orchestrator state {path} is malformed: {e}") from None


def prune_states(root: Path, before: int) -> None:
    """Delete the state files of steps before ``before`` (no checkpoint is left to pair them with)."""
    for step in state_steps(root):
        if step < before:
            state_path(root, step).unlink(missing_ok=True)


def group_to_dict(group: RolloutGroup) -> dict[str, Any]:
    """A waiting group as plain JSON data."""
    return asdict(group)


def group_from_dict(data: dict[str, Any]) -> RolloutGroup:
    """The inverse of :func:`group_to_dict`."""
    rollouts = [
        Rollout(reward=float(r["reward"]), samples=[TrainingSample(**s) for s in r["samples"]],
                is_truncated=bool(r["is_truncated"]), advantage=float(r["advantage"]))
        for r in data["rollouts"]
    ]
    return RolloutGroup(example_id=int(data["example_id"]), rollouts=rollouts,
                        policy_version=int(data["policy_version"]), task=str(data["task"]),
                        metrics={str(k): float(v) for k, v in data["metrics"].items()})


__all__ = ["STATE_FORMAT", "OrchestratorState", "group_from_dict", "group_to_dict", "load_state", "prune_states",
           "save_state", "state_dir", "state_path", "state_steps"]
