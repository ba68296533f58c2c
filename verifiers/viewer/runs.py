"""Finding evaluation runs under an outputs folder and reading what each one's ``metadata.json`` says.

A run is a folder holding ``metadata.json`` or ``results.jsonl`` (``vf-eval`` writes both to
``<outputs>/evals/<env>--<model>/<run_id>/``; ``-o DIR`` moves ``<outputs>``). The walk is bounded in depth
and in folders visited, so pointing the viewer at a home directory cannot make it crawl the disk.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from verifiers.viewer.printable import as_text

METADATA = "metadata.json"
RESULTS = "results.jsonl"
MAX_DEPTH = 6
"""Folders below the outputs folder searched for runs: ``evals/<env>--<model>/<run_id>`` is 3 deep, and the
main job nests its runs one or two folders further down."""
MAX_FOLDERS = 20_000
MAX_METADATA_BYTES = 16 * 1024 * 1024
"""A ``metadata.json`` is a few KB; a bigger one is not read (it would be parsed whole)."""


@dataclass(frozen=True)
class RunSummary:
    """One run as the run list shows it; ``problem`` says why its metadata could not be read."""

    path: Path
    env_id: str
    model: str
    date: str
    num_examples: int | None
    rollouts_per_example: int | None
    avg_reward: float | None
    status: str
    pass_threshold: float | None = None
    error: str | None = None
    problem: str | None = None

    @property
    def size(self) -> str:
        """``examples × rollouts``, with ``?`` for what the metadata does not say."""
        examples = "?" if self.num_examples is None else str(self.num_examples)
        rollouts = "?" if self.rollouts_per_example is None else str(self.rollouts_per_example)
        return f"{examples} × {rollouts}"


@dataclass(frozen=True)
class Discovery:
    """The runs found, newest first, and whether the walk stopped before it had seen every folder."""

    runs: list[RunSummary]
    truncated: bool = False


def discover_runs(outputs_dir: Path) -> Discovery:
    """Every run under ``outputs_dir`` (or ``outputs_dir`` itself, when it is a run), newest first."""
    found: list[Path] = []
    truncated = False
    visited = 0
    stack: list[tuple[Path, int]] = [(outputs_dir, 0)]
    while stack:
        folder, depth = stack.pop()
        visited += 1
        if visited > MAX_FOLDERS:
            truncated = True
            break
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue  # unreadable or vanished while walking: not a run
        names = {e.name for e in entries}
        if METADATA in names or RESULTS in names:
            found.append(folder)
            continue  # a run's own subfolders are not runs
        if depth < MAX_DEPTH:
            stack.extend((Path(e.path), depth + 1) for e in reversed(entries)
                         if not e.name.startswith(".") and e.is_dir(follow_symlinks=False))
    runs = [read_run(path) for path in found]
    runs.sort(key=lambda run: (run.date, str(run.path)), reverse=True)
    return Discovery(runs, truncated)


def read_run(run_dir: Path) -> RunSummary:
    """A run's summary from its ``metadata.json``; when that is missing or unreadable, a row that says so."""
    path = run_dir / METADATA
    try:
        size = path.stat().st_size
        if size > MAX_METADATA_BYTES:
            return _unread(run_dir, f"{METADATA} is {size / 1e6:.1f} MB, over the {MAX_METADATA_BYTES // 2**20} MiB "
                                    "a metadata file may have; not read")
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return _unread(run_dir, f"no {METADATA} (the run never started, or it was deleted); its results can still "
                                "be opened")
    except (OSError, ValueError, RecursionError) as error:
        # ValueError: bad UTF-8, bad JSON, or an integer of more digits than Python converts; RecursionError:
        # nesting deeper than the parser goes. Each is this run's row saying so, never the viewer's crash.
        return _unread(run_dir, f"{METADATA} is unreadable: {as_text(str(error))}")
    if not isinstance(data, dict):
        return _unread(run_dir, f"{METADATA} is not a JSON object")
    env_guess, model_guess = _names_from_folder(run_dir)
    config = data["config"] if isinstance(data.get("config"), dict) else {}
    return RunSummary(
        path=run_dir,
        env_id=_text(data.get("env_id"), env_guess),
        model=_text(data.get("model"), model_guess),
        date=_date(data.get("date")),
        num_examples=_int(data.get("num_examples")),
        rollouts_per_example=_int(data.get("rollouts_per_example")),
        avg_reward=_float(data.get("avg_reward")),
        status=_text(data.get("status"), "unknown"),
        pass_threshold=_float(data.get("pass_threshold", config.get("pass_threshold"))),
        error=None if data.get("error") is None else as_text(data["error"], limit=2000),
    )


def _unread(run_dir: Path, problem: str) -> RunSummary:
    """The row of a run whose metadata could not be read: names guessed from its folder, nothing else known."""
    env_guess, model_guess = _names_from_folder(run_dir)
    return RunSummary(path=run_dir, env_id=env_guess, model=model_guess, date="", num_examples=None,
                      rollouts_per_example=None, avg_reward=None, status="error", problem=problem)


def _names_from_folder(run_dir: Path) -> tuple[str, str]:
    """Environment and model from vf-eval's ``<env>--<model>/<run_id>`` layout, for when metadata does not say."""
    env_guess, _, model_guess = run_dir.parent.name.partition("--")
    return env_guess or run_dir.name, model_guess or "?"


def _text(value: Any, default: str) -> str:
    return default if value is None else as_text(value)


def _int(value: Any) -> int | None:
    plausible = isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**15
    return value if plausible else None


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:  # an integer past float's range
        return None


def _date(value: Any) -> str:
    """``YYYY-MM-DD HH:MM`` from vf-eval's ISO timestamp (UTC); any other text as it is."""
    if not isinstance(value, str):
        return ""
    try:
        return datetime.fromisoformat(value[:64]).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return value[:32]


__all__ = ["Discovery", "RunSummary", "discover_runs", "read_run"]
