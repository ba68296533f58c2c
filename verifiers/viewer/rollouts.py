"""Reading a run's ``results.jsonl`` with bounded work: an index of rows first, one whole rollout on demand.

The index keeps a few fields per line (example, reward, error) and where the line lies in the file, never the
records themselves, so a big run costs a small list. Three limits bound the work and each says what it cut: a
line longer than :attr:`Limits.max_line_bytes` is skipped in chunks without being held in memory (its row says
how long it was), and reading stops after :attr:`Limits.max_rows` lines or :attr:`Limits.max_bytes` bytes.
A line that is not a JSON object (a torn tail of a killed run, a corrupt byte) becomes a row with a problem.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from verifiers.viewer.printable import as_text

_SKIP_CHUNK = 1024 * 1024
_ERROR_CHARS = 200


@dataclass(frozen=True)
class Limits:
    """How much of a results file the viewer reads."""

    max_rows: int = 10_000
    max_line_bytes: int = 8 * 1024 * 1024
    max_bytes: int = 256 * 1024 * 1024


@dataclass(frozen=True)
class RolloutRow:
    """One line of ``results.jsonl`` as the rollout list shows it.

    ``offset`` and ``length`` locate the line for :func:`read_rollout`; ``problem`` is set when the line could
    not be read as a rollout (then the other fields are what could be salvaged, usually nothing).
    """

    line: int
    offset: int
    length: int
    example_id: str = "?"
    rollout_index: str = "?"
    task: str = ""
    reward: float | None = None
    error: str | None = None
    problem: str | None = None

    @property
    def failed(self) -> bool:
        """The rollout errored, or its line is not a readable rollout."""
        return self.error is not None or self.problem is not None


@dataclass
class RolloutIndex:
    """The rows read from a results file and what the limits left out."""

    path: Path
    rows: list[RolloutRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What was cut or could not be read, one sentence each, for the screen."""


def load_rollouts(path: Path, limits: Limits = Limits()) -> RolloutIndex:
    """The index of ``path``; a missing or unreadable file gives an empty index with a note."""
    index = RolloutIndex(path)
    try:
        file = path.open("rb")
    except FileNotFoundError:
        index.notes.append(f"{path.name} does not exist: no rollout was saved")
        return index
    except OSError as error:
        index.notes.append(f"{path.name} cannot be read: {error}")
        return index
    with file:
        _read_rows(file, index, limits)
    return index


def _read_rows(file: BinaryIO, index: RolloutIndex, limits: Limits) -> None:
    offset = 0
    line = 0
    while True:
        if len(index.rows) >= limits.max_rows or offset >= limits.max_bytes:
            rest = _bytes_left(file, offset)
            if rest:
                what = f"{limits.max_rows:,} rollouts" if len(index.rows) >= limits.max_rows else \
                    _size(limits.max_bytes)
                index.notes.append(f"showing the first {what}; {rest / 1e6:.1f} MB of the file was not read")
            return
        raw = file.readline(limits.max_line_bytes + 1)
        if not raw:
            return
        line += 1
        length = len(raw)
        if len(raw) > limits.max_line_bytes and not raw.endswith(b"\n"):
            length += _skip_line(file)
            index.rows.append(RolloutRow(line, offset, length, problem=(
                f"line {line} is {length / 1e6:.1f} MB, over the {_size(limits.max_line_bytes)} a line may have: "
                "not loaded")))
        elif raw.strip():
            index.rows.append(_row(raw, line, offset, length))
        offset += length


def _skip_line(file: BinaryIO) -> int:
    """Read past the rest of an over-long line, a chunk at a time; the bytes skipped."""
    skipped = 0
    while True:
        chunk = file.readline(_SKIP_CHUNK)
        skipped += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            return skipped


def _size(limit: int) -> str:
    return f"{limit / 2**20:g} MiB" if limit >= 2**20 else f"{limit:,} bytes"


def _bytes_left(file: BinaryIO, offset: int) -> int:
    try:
        return max(0, file.seek(0, 2) - offset)
    except OSError:
        return 0


def _row(raw: bytes, line: int, offset: int, length: int) -> RolloutRow:
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError) as bad:  # bad UTF-8 or JSON, a huge integer, too deep a nesting
        torn = "" if raw.endswith(b"\n") else " (the unfinished last line of a run that was stopped?)"
        return RolloutRow(line, offset, length, problem=f"line {line} is not valid JSON: {as_text(str(bad))}{torn}")
    if not isinstance(record, dict):
        return RolloutRow(line, offset, length, problem=f"line {line} is a JSON {type(record).__name__}, "
                                                        "not a rollout object")
    reward = record.get("reward")
    error = record.get("error")
    return RolloutRow(
        line, offset, length,
        example_id=as_text(record.get("example_id", "?"), limit=40),
        rollout_index=as_text(record.get("rollout_index", "?"), limit=40),
        task=as_text(record.get("task") or ""),
        reward=float(reward) if isinstance(reward, (int, float)) and (isinstance(reward, float) or _small_int(reward))
        else None,
        error=_first_line(error) if error else None,
    )


def _small_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**15


def _first_line(error: Any) -> str:
    text = as_text(error, limit=_ERROR_CHARS * 4).strip()
    first = text.splitlines()[0] if text else "?"
    return first if len(first) <= _ERROR_CHARS else first[:_ERROR_CHARS] + "…"


def in_example_order(rows: list[RolloutRow]) -> list[RolloutRow]:
    """``rows`` by example, then rollout: the file holds groups in the order they finished, not by example.

    Rows without a numeric id (unreadable lines) go last, in file order.
    """

    def key(row: RolloutRow) -> tuple[int, int, str, int, int]:
        example = int(row.example_id) if row.example_id.lstrip("-").isdigit() else None
        rollout = int(row.rollout_index) if row.rollout_index.lstrip("-").isdigit() else 0
        return (example is None, example or 0, row.task, rollout, row.line)

    return sorted(rows, key=key)


def read_rollout(path: Path, row: RolloutRow, limits: Limits = Limits()) -> dict[str, Any]:
    """The whole record of ``row``, read again from its place in the file.

    Raises ``ValueError`` (with a sentence for the screen) when the row has a problem, the line is over the
    limit, or the file changed under it (a run still writing, or rewritten by ``vf-eval --resume``).
    """
    if row.problem is not None:
        raise ValueError(row.problem)
    if row.length > limits.max_line_bytes:
        raise ValueError(f"line {row.line} is over the {_size(limits.max_line_bytes)} a line may have")
    try:
        with path.open("rb") as file:
            file.seek(row.offset)
            raw = file.read(row.length)
    except OSError as error:
        raise ValueError(f"{path.name} cannot be read: {error}") from error
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError):
        raise ValueError(f"line {row.line} changed since the list was read (the run is still writing, or was "
                         "resumed): reopen the run") from None
    if not isinstance(record, dict):
        raise ValueError(f"line {row.line} is not a rollout object")
    return record


__all__ = ["Limits", "RolloutIndex", "RolloutRow", "in_example_order", "load_rollouts", "read_rollout"]
