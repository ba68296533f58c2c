"""Slots on disk: atomic claims, and the reaping of what a dead owner left."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from verifiers.errors import SandboxError
from verifiers.sandboxes.local import slots


def test_claims_are_exclusive_and_bounded(tmp_path: Path) -> None:
    first, second = slots.claim(tmp_path, 2), slots.claim(tmp_path, 2)
    assert {first.number, second.number} == {0, 1}
    with pytest.raises(SandboxError, match="max_sandboxes"):
        slots.claim(tmp_path, 2)


def test_reap_removes_only_what_dead_owners_left(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    mine = slots.claim(tmp_path, 10)
    mine.write_owner("sbx-mine")
    orphan = slots.claim(tmp_path, 10)
    (orphan.path / slots.OWNER_FILE).write_text(json.dumps({"pid": dead.pid, "start": 1, "sandbox_id": "x"}))
    (orphan.path / "files").mkdir()
    young, old = slots.claim(tmp_path, 10), slots.claim(tmp_path, 10)  # claimed, owner not yet written
    os.utime(old.path, (time.time() - 3600, time.time() - 3600))
    assert slots.reap(tmp_path, "files", None) == 2
    assert mine.path.exists() and young.path.exists()
    assert not orphan.path.exists() and not old.path.exists()
