"""The bundled bug instances and pristine project trees (built by ``build_dataset.py``)."""

from __future__ import annotations

import functools
import gzip
import json
from importlib.resources import files
from typing import Any

REQUIRED = ("instance_id", "project", "version", "file", "function", "mutation", "split", "bug_patch", "fix_patch",
            "FAIL_TO_PASS", "PASS_TO_PASS", "failure_output")


@functools.cache
def _all_instances() -> tuple[dict[str, Any], ...]:
    data = files("swe").joinpath("data", "instances.jsonl.gz").read_bytes()
    return tuple(json.loads(line) for line in gzip.decompress(data).decode("utf-8").splitlines() if line)


def read_instances(split: str | None = None) -> list[dict[str, Any]]:
    """Every instance (copies), or those of ``split`` (``train`` or ``eval``), in a fixed order."""
    return [dict(row) for row in _all_instances() if split is None or row["split"] == split]


@functools.cache
def repo_archive(project: str) -> bytes:
    """The pristine tree of ``project`` as a gzipped tar (its files at the archive's top level)."""
    return files("swe").joinpath("data", "repos", f"{project}.tar.gz").read_bytes()
