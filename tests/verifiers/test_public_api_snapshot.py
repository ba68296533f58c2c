"""``verifiers.__all__`` frozen: the names environments import from ``vf`` only change on purpose.

A deliberate change updates the snapshot:
``VF_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/verifiers/test_public_api_snapshot.py``
(and CHANGELOG.md says what was added or removed).
"""

from __future__ import annotations

import os
from pathlib import Path

import verifiers as vf

SNAPSHOT = Path(__file__).resolve().parent / "snapshots" / "verifiers_all.txt"


def test_verifiers_all_matches_its_snapshot() -> None:
    names = sorted(vf.__all__)
    if os.environ.get("VF_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text("\n".join(names) + "\n")
    frozen = SNAPSHOT.read_text().split()
    assert names == frozen, {"added": sorted(set(names) - set(frozen)), "removed": sorted(set(frozen) - set(names))}


def test_every_public_name_resolves_and_appears_once() -> None:
    assert len(vf.__all__) == len(set(vf.__all__))
    missing = [name for name in vf.__all__ if not hasattr(vf, name)]
    assert missing == []
