"""``results.jsonl``: one line per scored rollout, appended a whole group at a time.

A group is written with a single ``write`` and flushed, so after ``kill -9``
the file holds complete groups plus at most one torn tail. Resuming keeps only
complete groups (every rollout of the example present, every line valid JSON, no
rollout that recorded an error), rewrites the file to exactly those, and runs the
rest: a group that met a dead server runs again rather than staying an error.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any, TextIO


class ResultsWriter:
    """Appends scored groups to ``results.jsonl``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: TextIO = path.open("a", encoding="utf-8")

    def append_group(self, outputs: list[dict[str, Any]]) -> None:
        if not outputs:
            return
        # default=str: an object an environment left in `info` is saved as its text, not a crash
        self._file.write("".join(json.dumps(o, ensure_ascii=False, default=str) + "\n" for o in outputs))
        self._file.flush()

    def close(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _group_key(output: dict[str, Any]) -> tuple[str, int]:
    return (str(output.get("task", "default")), int(output["example_id"]))


def load_complete_groups(path: Path, rollouts_per_example: int) -> list[dict[str, Any]]:
    """The outputs of every complete group without an errored rollout in ``path``; the file is rewritten to hold
    only those (the others run again)."""
    if not path.exists():
        return []
    groups: dict[tuple[str, int], dict[int, dict[str, Any]]] = defaultdict(dict)
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            output = json.loads(line)
        except json.JSONDecodeError:
            continue  # the torn tail of a killed run
        if isinstance(output, dict) and "example_id" in output:
            groups[_group_key(output)][int(output.get("rollout_index", 0))] = output
    complete = [
        group[r] for group in groups.values()
        if len(group) >= rollouts_per_example and not any(o.get("error") for o in group.values())
        for r in sorted(group)
    ]
    tmp = path.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in complete), encoding="utf-8")
    os.replace(tmp, path)
    return complete


__all__ = ["ResultsWriter", "load_complete_groups"]
