"""The Hub list benchmark: a small real run, its table, and bad arguments."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "hub_list.py"


@pytest.fixture(scope="module")
def bench(load_script) -> ModuleType:
    return load_script(BENCH, "hub_list_under_test")


def test_a_small_catalogue_is_built_and_measured(bench: ModuleType, tmp_path: Path) -> None:
    row = bench.measure(40, 1, tmp_path)
    assert row.projects == 40 and all(v > 0 for v in (row.first_page, row.middle_page, row.by_tag, row.load_all))
    table = bench.report([row])
    assert table.splitlines()[2].startswith("| 40 |") and table.endswith("× |")


def test_the_quick_run_prints_a_table(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--quick"]) == 0
    assert "| 100 |" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--sizes", "0"], ["--repeats", "0"], ["--sizes", "x"]])
def test_bad_arguments_are_refused(bench: ModuleType, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        bench.main(argv)
    assert exit_info.value.code == 2
