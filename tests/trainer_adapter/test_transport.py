"""Micro-batches travel orchestrator → trainer as per-rank JSON files that appear all at once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from trainer_adapter.orchestrator.packing import Sample, distribute, pack
from trainer_adapter.transport import read_step, remove_steps_before, step_dir, wait_for_step, write_step


def _per_rank():
    samples = [Sample([1, 2, 3], [False, True, True], [0.0, -0.5, -0.25], 0.5, policy_version=2),
               Sample([4, 5], [False, True], [0.0, -1.0], -0.5, policy_version=3)]
    return distribute(pack(samples, seq_len=3, temperature=0.8), 2)


def test_round_trip_per_rank(tmp_path: Path) -> None:
    per_rank = _per_rank()
    write_step(tmp_path, 4, per_rank)
    assert sorted(p.name for p in step_dir(tmp_path, 4).iterdir()) == ["rank_0.json", "rank_1.json"]
    assert [p.name for p in (tmp_path / "rollouts").iterdir()] == ["step_4"]  # no temporary folder left
    for rank in (0, 1):
        assert read_step(tmp_path, 4, rank) == per_rank[rank]


def test_wait_sees_a_batch_written_later_and_times_out_otherwise(tmp_path: Path) -> None:
    per_rank = _per_rank()
    writer = threading.Timer(0.2, write_step, args=(tmp_path, 1, per_rank))
    writer.start()
    started = time.monotonic()
    assert wait_for_step(tmp_path, 1, 1, timeout_s=10) == per_rank[1]
    assert time.monotonic() - started >= 0.15
    with pytest.raises(TimeoutError, match="no batch for step 2"):
        wait_for_step(tmp_path, 2, 0, timeout_s=0.1)


def test_consumed_steps_are_removed(tmp_path: Path) -> None:
    for step in range(3):
        write_step(tmp_path, step, _per_rank())
    remove_steps_before(tmp_path, 2)
    assert [p.name for p in (tmp_path / "rollouts").iterdir()] == ["step_2"]
