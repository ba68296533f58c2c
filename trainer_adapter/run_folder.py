"""The numbered folders of a run (``checkpoints/``, ``weights/``, ``rollouts/``, ``orchestrator_state/``).

Every process of a run names what it writes for step n ``step_<n>`` (a folder, or ``step_<n>.json``) and
makes it appear all at once by renaming a temporary name into place, so a name that matches is complete.
This module reads those names; it imports nothing heavy, so the orchestrator and the launcher can use it
without torch.
"""

from __future__ import annotations

import re
from pathlib import Path

_STEP_NAME = re.compile(r"step_(\d+)(\.json)?")
CHECKPOINT_MARKER = "progress.json"
"""The file a checkpoint folder gets last: a ``step_<n>`` folder without it is not a checkpoint."""


def numbered_steps(parent: Path, marker: str | None = None) -> list[int]:
    """Steps ``n`` of the ``step_<n>`` entries of ``parent``, ascending (only folders holding ``marker`` if given).

    Temporary names (``.step_<n>.tmp...``) never match.
    """
    if not parent.is_dir():
        return []
    steps = []
    for path in parent.iterdir():
        match = _STEP_NAME.fullmatch(path.name)
        if match and (marker is None or (path / marker).is_file()):
            steps.append(int(match.group(1)))
    return sorted(steps)


def checkpoint_steps(root: Path) -> list[int]:
    """Steps of the complete checkpoints under ``root`` (a run's ``checkpoints/``), ascending."""
    return numbered_steps(root, CHECKPOINT_MARKER)


__all__ = ["CHECKPOINT_MARKER", "checkpoint_steps", "numbered_steps"]
