"""``vf-train rl --resume``: the step a killed run continues from, and its folder put back to that step.

A run can continue from step k when three things of step k are on disk: the trainer's checkpoint
(``checkpoints/step_k``, model and optimizer), the weights it exported (``weights/step_k``, which the
servers are loaded with) and the orchestrator's state (``orchestrator_state/step_k.json``). k is the
newest step that has all three; the newest checkpoint normally is one. What the killed run did after
step k is removed, because nothing of it is in the restored state:

- ``weights/step_n`` for n > k (the orchestrator would hand them to the servers at once);
- every leftover batch ``rollouts/step_n``: those before k were trained already, and those from k on
  were chosen from the state of step k plus groups the resumed run no longer has, some possibly made by
  weights beyond k that the resumed trainer never had. The resumed orchestrator chooses batch k again
  from the saved state; training the old batches as well would train rollouts twice or out of order.
  The dropped ones are counted (``dropped_batches_on_resume`` in the orchestrator's metrics);
- checkpoints and orchestrator states after k, temporary folders of interrupted writes;
- metrics lines after k: ``orchestrator_metrics.jsonl`` keeps steps < k (its step n is batch n),
  ``trainer_metrics.jsonl`` steps <= k (its step n is the weights after n steps), ``eval_metrics.jsonl``
  steps < k (the resumed run evaluates step k again when due). A half-written last line is dropped.

A run may only continue under the config it started with (``run_config.json``); fields that say where or
how fast processes run (:data:`MAY_CHANGE_ON_RESUME`) may differ.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from trainer_adapter.errors import RunFolderError
from trainer_adapter.orchestrator.state import state_dir, state_path, state_steps
from trainer_adapter.run_folder import checkpoint_steps, numbered_steps

RUN_CONFIG = "run_config.json"
"""The config a run started with, as JSON."""

PROGRESS = ("checkpoints", "weights", "rollouts", "orchestrator_state", "trainer_metrics.jsonl",
            "orchestrator_metrics.jsonl", "eval_metrics.jsonl")
"""What a run that got as far as its first batch leaves; a folder with none of these holds no run yet."""

MAY_CHANGE_ON_RESUME = (
    "output_dir", "trainer_poll_s", "trainer.checkpoint.keep", "orchestrator.weights_poll_s",
    "orchestrator.weights_timeout_s", "inference.num_servers", "inference.python", "inference.max_num_seqs",
    "inference.kv_cache_gib", "inference.gpu_memory_utilization", "inference.start_timeout_s", "inference.urls",
    "inference.health", "broadcast",
)
"""Config fields (dotted) a resumed run may set differently: where and how fast things run, not what is learnt."""

_METRICS_KEPT: dict[str, Callable[[int, int], bool]] = {
    "orchestrator_metrics.jsonl": lambda step, k: step < k,
    "trainer_metrics.jsonl": lambda step, k: step <= k,
    "eval_metrics.jsonl": lambda step, k: step < k,
}


@dataclass(frozen=True)
class ResumePoint:
    """Step ``step`` of a run and the three things it continues from."""

    step: int
    checkpoint: Path
    weights: Path
    state: Path


@dataclass
class Rewind:
    """What :func:`rewind` removed."""

    dropped_batches: list[int] = field(default_factory=list)
    """Untrained batches (steps >= the resume step) deleted."""
    removed_weights: list[int] = field(default_factory=list)
    removed_checkpoints: list[int] = field(default_factory=list)
    removed_lines: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        """One line for the console."""
        parts = [f"dropped {len(self.dropped_batches)} untrained batch(es) {self.dropped_batches}"]
        if self.removed_weights:
            parts.append(f"removed weights newer than the checkpoint {self.removed_weights}")
        if self.removed_checkpoints:
            parts.append(f"removed checkpoints without an orchestrator state {self.removed_checkpoints}")
        lines = sum(self.removed_lines.values())
        if lines:
            parts.append(f"truncated {lines} metrics line(s)")
        return "; ".join(parts)


def run_entries(root: Path) -> list[str]:
    """The entries of :data:`PROGRESS` present in ``root``."""
    return [name for name in PROGRESS if (root / name).exists()]


def check_fresh_folder(root: Path) -> None:
    """Refuse to start a new run where one already made progress (it would mix with the old one's files)."""
    found = run_entries(root)
    if found:
        raise RunFolderError(f"{root} already holds a vf-train rl run ({', '.join(found)}): use --resume or another "
                             "folder (--output-dir DIR)")


def config_differences(saved: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """``key: saved -> now`` for every dotted field that differs, except :data:`MAY_CHANGE_ON_RESUME`."""
    before, after = _flatten(saved), _flatten(now)
    out = []
    for key in sorted(before.keys() | after.keys()):
        if any(key == p or key.startswith(f"{p}.") for p in MAY_CHANGE_ON_RESUME):
            continue
        if before.get(key, "<unset>") != after.get(key, "<unset>"):
            out.append(f"{key}: {before.get(key, '<unset>')!r} -> {after.get(key, '<unset>')!r}")
    return out


def find_resume_point(root: Path, config: Mapping[str, Any], checkpoint_every: int) -> ResumePoint:
    """The step to continue the run in ``root`` from, started with ``config`` (a JSON dump of its ``RLRunConfig``).

    Raises :class:`RunFolderError` when there is no run, it was started with another config, or it has
    no step to continue from.
    """
    saved_path = root / RUN_CONFIG
    try:
        saved = json.loads(saved_path.read_text())
    except FileNotFoundError:
        raise RunFolderError(f"{root} holds no vf-train rl run to resume (no {RUN_CONFIG}); start one without "
                             "--resume") from None
    except json.JSONDecodeError as e:
        raise RunFolderError(f"{saved_path} is not valid JSON ({e}): cannot check the run's config") from None
    differences = config_differences(saved, config)
    if differences:
        shown = "; ".join(differences[:8]) + (f"; and {len(differences) - 8} more" if len(differences) > 8 else "")
        raise RunFolderError(f"{root} holds a run of a different config ({shown}); resume it with the config it "
                             f"started with (saved in {saved_path}), or start this one in another folder")
    checkpoints = checkpoint_steps(root / "checkpoints")
    if not checkpoints:
        if checkpoint_every == 0:
            hint = ("checkpoints are off (trainer.checkpoint.every = 0): set trainer.checkpoint.every, e.g. "
                    "--trainer.checkpoint.every 10, so that a run can be resumed")
        else:
            hint = (f"the run stopped before its first checkpoint (step {checkpoint_every}); start it again in "
                    "another folder, or delete this one")
        raise RunFolderError(f"nothing to resume in {root}: no complete checkpoint under {root / 'checkpoints'}; "
                             f"{hint}")
    usable = [s for s in checkpoints if state_path(root, s).is_file() and _weights_complete(root, s)]
    if not usable:
        newest = checkpoints[-1]
        missing = [name for name, ok in (("orchestrator state", state_path(root, newest).is_file()),
                                         ("weights", _weights_complete(root, newest))) if not ok]
        raise RunFolderError(f"nothing to resume in {root}: checkpoint step {newest} has no matching "
                             f"{' and '.join(missing)} ({state_path(root, newest)}, "
                             f"{root / 'weights' / f'step_{newest}'})")
    step = usable[-1]
    return ResumePoint(step, root / "checkpoints" / f"step_{step}", root / "weights" / f"step_{step}",
                       state_path(root, step))


def rewind(root: Path, step: int) -> Rewind:
    """Remove what the run in ``root`` did after ``step`` (see the module docstring)."""
    report = Rewind()
    for n in numbered_steps(root / "weights"):
        if n > step:
            shutil.rmtree(root / "weights" / f"step_{n}")
            report.removed_weights.append(n)
    rollouts = root / "rollouts"
    report.dropped_batches = [n for n in numbered_steps(rollouts) if n >= step]
    shutil.rmtree(rollouts, ignore_errors=True)
    for n in numbered_steps(root / "checkpoints"):
        if n > step:
            shutil.rmtree(root / "checkpoints" / f"step_{n}")
            report.removed_checkpoints.append(n)
    for n in state_steps(root):
        if n > step:
            state_path(root, n).unlink()
    for folder in (root / "weights", root / "checkpoints", state_dir(root)):
        for tmp in folder.glob(".step_*") if folder.is_dir() else ():
            shutil.rmtree(tmp) if tmp.is_dir() else tmp.unlink()
    for name, keep in _METRICS_KEPT.items():
        removed = truncate_jsonl(root / name, _line_filter(keep, step))
        if removed:
            report.removed_lines[name] = removed
    return report


def _line_filter(keep: Callable[[int, int], bool], step: int) -> Callable[[dict[str, Any]], bool]:
    """Whether a metrics line stays when the run goes back to ``step``, by its own ``step``."""
    return lambda line: keep(int(line["step"]), step)


def truncate_jsonl(path: Path, keep: Callable[[dict[str, Any]], bool]) -> int:
    """Keep the lines of a JSONL file for which ``keep`` is true, atomically; returns how many lines went.

    Lines that do not parse (the half-written last line of a killed process) go too.
    """
    if not path.is_file():
        return 0
    lines = path.read_text().splitlines()
    kept = []
    for line in lines:
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and "step" in data and keep(data):
            kept.append(line)
    if len(kept) == len(lines):
        return 0
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text("".join(f"{line}\n" for line in kept))
    os.replace(tmp, path)
    return len(lines) - len(kept)


def lock_run_folder(root: Path) -> IO[str]:
    """Hold ``root/.vf-train.lock`` while the run lives; :class:`RunFolderError` if another run holds it.

    The kernel releases the lock when the holder dies, ``kill -9`` included; keep the returned file open.
    """
    root.mkdir(parents=True, exist_ok=True)
    handle = (root / ".vf-train.lock").open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise RunFolderError(f"another vf-train rl (pid {holder}) is running in {root}; stop it first") from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def _weights_complete(root: Path, step: int) -> bool:
    return (root / "weights" / f"step_{step}" / "config.json").is_file()


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and value:
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


__all__ = ["MAY_CHANGE_ON_RESUME", "PROGRESS", "RUN_CONFIG", "ResumePoint", "Rewind", "check_fresh_folder",
           "config_differences", "find_resume_point", "lock_run_folder", "rewind", "run_entries", "truncate_jsonl"]
