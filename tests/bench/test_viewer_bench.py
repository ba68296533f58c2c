"""The viewer benchmark: the run folder it writes, its table and arguments, a worker with no run, a tiny real run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from verifiers.viewer.rollouts import load_rollouts, read_rollout
from verifiers.viewer.runs import discover_runs

BENCH = Path(__file__).resolve().parents[2] / "bench" / "viewer.py"


@pytest.fixture(scope="module")
def bench(load_script) -> ModuleType:
    return load_script(BENCH, "viewer_bench_under_test")


def test_the_run_folder_is_a_vf_eval_run_with_one_answer_per_line(bench: ModuleType, tmp_path: Path) -> None:
    run_dir = bench.write_run(tmp_path / "outputs", 10)
    [run] = discover_runs(tmp_path / "outputs").runs
    assert (run.path, run.env_id, run.model, run.status, run.size, run.problem) == (
        run_dir, "bench", "scripted", "complete", "3 × 4", None)
    index = load_rollouts(run_dir / "results.jsonl")
    assert [row.line for row in index.rows] == list(range(1, 11)) and not index.notes
    assert not any(row.problem for row in index.rows)
    example_ids = [int(row.example_id) for row in index.rows]
    assert sorted(set(example_ids)) == [0, 1, 2] and example_ids != sorted(example_ids)  # groups as they finish
    for row in index.rows:
        record = read_rollout(run_dir / "results.jsonl", row)
        final = record["completion"][-1]["content"]
        assert final.endswith(bench.answer_marker(row.line)) and bench.answer_marker(row.line + 1) not in final
        assert [m["role"] for m in record["completion"]] == ["assistant", "tool"] * bench.TOOL_TURNS + ["assistant"]
        assert 2_000 < row.length < 8_000  # a few KB, as the docs say
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["num_scored"] + metadata["num_masked"] == 10


def test_the_table_shows_each_viewer_and_the_ratio(bench: ModuleType) -> None:
    figures = {"first_screen_s": 1.0, "read_s": 0.5, "open_s": 2.0, "deep_ms": 100.0, "rss_first_mib": 40.0,
               "peak_rss_mib": 50.0, "rows": 10.0, "deep_line": 10.0}
    row = {"size": 10, "megabytes": 0.04, "medians": {"ours": figures, "original": {**figures, "open_s": 6.0}},
           "original_over_ours": {"first_screen_s": 1.0, "read_s": 1.0, "open_s": 3.0, "deep_ms": 1.0,
                                  "peak_rss_mib": 1.0}}
    lines = bench.report([row], 3).splitlines()
    assert lines[0].startswith("medians of 3 runs")
    assert lines[3].startswith("| 10 | 0 MB | ours | 1.00 | 2.00 | 0.50 | 100 | 50 | 10 | 10 |")
    assert lines[4].startswith("| 10 | 0 MB | 0.1.5 | 1.00 | 6.00 |") and "| 3.0× |" in lines[5]


@pytest.mark.parametrize("argv", [["--sizes", "0"], ["--repeats", "0"], ["--max-rows", "0"], ["--sizes", "x"]])
def test_bad_arguments_are_refused(bench: ModuleType, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        bench.main(argv)
    assert exit_info.value.code == 2


@pytest.mark.slow
@pytest.mark.parametrize("sdk", ["ours", "original"])
def test_a_worker_without_a_run_says_so(bench: ModuleType, tmp_path: Path, sdk: str) -> None:
    if not bench.PYTHONS[sdk].exists():
        pytest.skip(f"needs {bench.PYTHONS[sdk]}")
    expected = rf"{sdk} worker failed \(exit 1\):\nno run under {re.escape(str(tmp_path))}"
    with pytest.raises(RuntimeError, match=expected):
        bench.run_worker(sdk, tmp_path, None, 120)


@pytest.mark.slow
def test_a_tiny_real_run_measures_both_viewers(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    if not bench.PYTHONS["original"].exists():
        pytest.skip("needs .venv-vf015: bash scripts/original_venv.sh 0.1.5")
    assert bench.main(["--sizes", "12", "--repeats", "1", "--max-rows", "8"]) == 0
    out = capsys.readouterr().out
    assert "| 12 | 0 MB | ours |" in out and "| 12 | 0 MB | 0.1.5 |" in out
    ours = next(line for line in out.splitlines() if "| ours |" in line)
    original = next(line for line in out.splitlines() if "| 0.1.5 |" in line)
    assert ours.endswith("| 8 | 8 |") and original.endswith("| 12 | 12 |")  # rows listed, deepest line shown
