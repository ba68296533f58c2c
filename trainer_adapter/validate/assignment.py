"""Which problems a worker must roll out at a step: seeded by (step, worker), so the validator can replay it.

A worker cannot choose its problems (it would pick easy ones, or ones it already solved): the seed is a hash
of the step and the worker's name, and the problems are a seeded draw without replacement from the dataset.
"""

from __future__ import annotations

import hashlib
import random


def assignment_seed(step: int, worker: str) -> int:
    """The seed of ``worker``'s data at ``step``: 64 bits of SHA-256 over both (stable across processes)."""
    digest = hashlib.sha256(f"{step}\x00{worker}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def assigned_problems(step: int, worker: str, dataset_size: int, problems: int) -> list[int]:
    """The ``problems`` dataset indices ``worker`` must roll out at ``step``, in order."""
    if not 0 < problems <= dataset_size:
        raise ValueError(f"cannot assign {problems} problems from a dataset of {dataset_size}")
    return random.Random(assignment_seed(step, worker)).sample(range(dataset_size), problems)


__all__ = ["assigned_problems", "assignment_seed"]
