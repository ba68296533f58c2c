"""Finding runs and reading their metadata: nested folders, missing and broken metadata, the walk's bounds."""

from __future__ import annotations

from pathlib import Path

from verifiers.viewer import runs
from verifiers.viewer.runs import discover_runs, read_run


def test_runs_are_found_at_any_nesting_newest_first(tmp_path: Path, write_run) -> None:
    old = write_run(env="alpha", run_id="a", date="2026-01-01T00:00:00+00:00")
    new = write_run(env="beta", root=tmp_path / "outputs" / "main_job", run_id="b", date="2026-03-01T10:30:00+00:00")
    found = discover_runs(tmp_path / "outputs")
    assert [run.path for run in found.runs] == [new, old] and not found.truncated
    first = found.runs[0]
    assert (first.env_id, first.model, first.date, first.size, first.status) == (
        "beta", "scripted", "2026-03-01 10:30", "4 × 1", "complete")
    assert first.avg_reward == 0.5 and first.problem is None


def test_a_run_folder_itself_is_a_run(write_run) -> None:
    run_dir = write_run()
    assert [run.path for run in discover_runs(run_dir).runs] == [run_dir]


def test_missing_metadata_is_a_row_that_says_so(tmp_path: Path) -> None:
    run_dir = tmp_path / "evals" / "toy--my-model" / "abc"
    run_dir.mkdir(parents=True)
    (run_dir / "results.jsonl").write_text("")
    run = discover_runs(tmp_path).runs[0]
    assert (run.env_id, run.model, run.status) == ("toy", "my-model", "error")
    assert run.problem is not None and "no metadata.json" in run.problem


def test_corrupt_or_odd_metadata_is_a_row_not_a_crash(tmp_path: Path) -> None:
    for name, text in (("torn", '{"env_id": "x", '), ("list", "[1, 2]"), ("binary", "\udcff")):
        folder = tmp_path / "evals" / "toy--m" / name
        folder.mkdir(parents=True)
        (folder / "metadata.json").write_bytes(text.encode("utf-8", "surrogateescape"))
    found = discover_runs(tmp_path).runs
    problems = {run.path.name: run.problem for run in found}
    assert "unreadable" in problems["torn"] and "not a JSON object" in problems["list"]
    assert "unreadable" in problems["binary"]
    assert {(run.env_id, run.model, run.status, run.size) for run in found} == {("toy", "m", "error", "? × ?")}


def test_wrong_types_in_metadata_are_shown_as_unknown(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "metadata.json").write_text('{"env_id": 3, "num_examples": "many", "avg_reward": "high", "date": 7}')
    run = read_run(folder)
    assert (run.env_id, run.size, run.avg_reward, run.date, run.status) == ("3", "? × ?", None, "", "unknown")


def test_an_oversized_metadata_file_is_not_parsed(tmp_path: Path) -> None:
    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "metadata.json").write_bytes(b" " * (runs.MAX_METADATA_BYTES + 1))
    run = read_run(folder)
    assert run.status == "error" and run.problem is not None and "not read" in run.problem


def test_the_walk_is_bounded_in_depth(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["d"] * (runs.MAX_DEPTH + 1))
    deep.mkdir(parents=True)
    (deep / "metadata.json").write_text("{}")
    assert discover_runs(tmp_path).runs == []
    assert len(discover_runs(deep.parent).runs) == 1


def test_an_empty_folder_has_no_runs(tmp_path: Path) -> None:
    assert discover_runs(tmp_path).runs == []
