"""The rollout index under bad input: corrupt and torn lines, a 50 MB line, 100k lines, a missing file."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import pytest

from verifiers.viewer.rollouts import Limits, in_example_order, load_rollouts, read_rollout


def test_rows_follow_the_file_and_reopen_whole(write_run) -> None:
    run_dir = write_run()
    index = load_rollouts(run_dir / "results.jsonl")
    assert [(r.line, r.example_id, r.rollout_index, r.reward, r.failed) for r in index.rows] == [
        (1, "0", "0", 0.0, False), (2, "1", "0", 1.0, False), (3, "2", "0", 0.0, False), (4, "3", "0", 1.0, False)]
    assert index.notes == []
    record = read_rollout(index.path, index.rows[2])
    assert record["completion"][-1]["content"] == "answer 2"


def test_corrupt_lines_become_rows_with_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    good = json.dumps({"example_id": 1, "reward": 0.5, "error": "ModelError: boom\ntraceback..."})
    path.write_bytes(b"\n".join([good.encode(), b"{not json", b"[1, 2]", b"\xff\xfe", b"", good.encode(),
                                 b'{"example_id": 9, "rew']))
    rows = load_rollouts(path).rows
    assert len(rows) == 6  # the blank line is skipped, but counted in the line numbers
    assert rows[0].error == "ModelError: boom" and rows[0].failed
    assert "not valid JSON" in (rows[1].problem or "")
    assert "JSON list, not a rollout object" in (rows[2].problem or "")
    assert "not valid JSON" in (rows[3].problem or "")
    assert rows[4].line == 6 and rows[4].problem is None
    assert "unfinished last line" in (rows[5].problem or "")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_rollout(path, rows[1])


def test_a_50_mb_line_is_skipped_without_being_held(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    huge = json.dumps({"example_id": 0, "reward": 1.0, "completion": "x" * 50_000_000})
    path.write_text(huge + "\n" + json.dumps({"example_id": 1, "reward": 0.0}) + "\n")
    tracemalloc.start()
    try:
        index = load_rollouts(path, Limits(max_line_bytes=4 * 2**20))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.1f} MiB"
    first, second = index.rows
    assert first.problem is not None and "50.0 MB" in first.problem and "not loaded" in first.problem
    assert first.length == len(huge) + 1 and second.offset == first.length and second.reward == 0.0
    with pytest.raises(ValueError, match="over the 4 MiB"):
        read_rollout(path, first, Limits(max_line_bytes=4 * 2**20))


def test_a_100k_line_file_is_cut_at_the_row_limit_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    line = json.dumps({"example_id": 0, "reward": 1.0, "completion": [{"role": "assistant", "content": "ok"}]})
    path.write_text("".join(line + "\n" for _ in range(100_000)))
    started = time.perf_counter()
    index = load_rollouts(path)
    assert time.perf_counter() - started < 10
    assert len(index.rows) == Limits().max_rows
    assert len(index.notes) == 1 and index.notes[0].startswith("showing the first 10,000 rollouts;")


def test_the_byte_budget_stops_reading_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps({"example_id": i, "reward": 0.0}) + "\n" for i in range(1000)))
    index = load_rollouts(path, Limits(max_bytes=1000))
    assert 0 < len(index.rows) < 1000 and index.notes[0].startswith("showing the first 1,000 bytes;")


def test_a_missing_results_file_is_a_note(tmp_path: Path) -> None:
    index = load_rollouts(tmp_path / "results.jsonl")
    assert index.rows == [] and index.notes == ["results.jsonl does not exist: no rollout was saved"]


def test_a_file_rewritten_under_the_list_is_an_error_not_a_crash(write_run) -> None:
    run_dir = write_run()
    index = load_rollouts(run_dir / "results.jsonl")
    (run_dir / "results.jsonl").write_text("short\n")
    with pytest.raises(ValueError, match="changed since the list was read"):
        read_rollout(index.path, index.rows[3])


def test_rows_are_listed_by_example_with_unreadable_lines_last(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    records = [{"example_id": 3, "rollout_index": 1}, {"example_id": 3, "rollout_index": 0}, "torn",
               {"example_id": 10, "rollout_index": 0}, {"example_id": 2, "rollout_index": 0}]
    path.write_text("".join((json.dumps(r) if isinstance(r, dict) else r) + "\n" for r in records))
    rows = in_example_order(load_rollouts(path).rows)
    assert [(r.example_id, r.rollout_index) for r in rows] == [("2", "0"), ("3", "0"), ("3", "1"), ("10", "0"),
                                                                ("?", "?")]
