"""Reading the argument and metric tables out of a README."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from hub_server.services.readme_tables import readme_tables

REPO = Path(__file__).resolve().parents[3]


def test_the_reference_environments_readme_tables() -> None:
    tables = readme_tables((REPO / "environments" / "reverse_text" / "README.md").read_text())
    assert [row["arg"] for row in tables.arguments] == [
        "num_train_examples", "num_eval_examples", "min_len", "max_len", "seed", "eval_split", "kind"]
    assert tables.arguments[2] == {"arg": "min_len", "type": "int", "default": "5",
                                   "description": "Shortest text, in characters (at least 1)."}
    assert [(row["metric"], row["weight"]) for row in tables.metrics] == [
        ("reward", ""), ("lcs_reward", "1.0"), ("exact_match", "0.0")]


def test_tables_belong_to_their_heading_and_others_are_ignored() -> None:
    text = ("## Datasets\n\n| name | rows |\n|---|---|\n| a | 1 |\n\n"
            "## Metrics\n\n| Metric | Weight | Meaning |\n|---|---|---|\n| `m` | 1 | **a** `b` |\n| `n` |\n")
    tables = readme_tables(text)
    assert tables.arguments == []
    assert tables.metrics == [{"metric": "m", "weight": "1", "meaning": "a b"},
                              {"metric": "n", "weight": "", "meaning": ""}]


def test_no_tables_and_bad_markdown_give_empty_lists() -> None:
    assert readme_tables("").arguments == [] and readme_tables("| a |\n|").metrics == []
    assert readme_tables("### Environment Arguments\n\nnone\n").arguments == []


ARGS = "### Environment Arguments\n\n| Arg | Type |\n|---|---|\n| `seed` | int |\n\n"


def test_inline_parsing_sees_only_headings_and_kept_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[int] = []
    original = MarkdownIt.parseInline

    def counting(self: MarkdownIt, src: str, env: Any = None) -> Any:
        parsed.append(len(src))
        return original(self, src, env)

    monkeypatch.setattr(MarkdownIt, "parseInline", counting)
    def pathological(brackets: int) -> str:
        return ARGS + "[" * brackets + "\n\n## Other\n\n| a |\n|---|\n| " + "[" * 100_000 + " |\n"

    assert readme_tables(pathological(400_000)).arguments == [{"arg": "seed", "type": "int"}]
    # one heading, a header row and a body row of the kept table, one more heading: nothing else
    assert parsed == [len("Environment Arguments"), 3, 4, 6, 3, len("Other")]
    parsed.clear()
    assert readme_tables(pathological(1_000_000)).arguments == [{"arg": "seed", "type": "int"}]
    assert parsed == [len("Environment Arguments"), 3, 4, 6, 3]  # "Other" lies past MAX_README_CHARS


def test_cells_rows_and_columns_are_cut() -> None:
    wide = "| " + " | ".join(f"c{i}" for i in range(30)) + " |\n|" + "---|" * 30 + "\n"
    rows = "".join(f"| `m{i}` | {'x' * 1500} |\n" for i in range(300))
    # a 450 kB table: a generous CPU budget, since this test is about the cuts (it ran out of the default's on a
    # busy CI machine, and the budget has tests of its own)
    tables = readme_tables("## Metrics\n\n" + wide + rows, budget_s=30.0)
    assert len(tables.metrics) == 200 and len(tables.metrics[0]) == 20
    assert tables.metrics[0]["c1"] == "x" * 1000 and tables.metrics[199]["c0"] == "m199"


def test_an_empty_table_leaves_the_place_to_a_later_one_and_references_resolve() -> None:
    text = ("## Arguments\n\n| arg |\n|---|\n\n## More arguments\n\n| arg | description |\n|---|---|\n"
            "| `k` | see [the docs][d] |\n\n[d]: https://example.org\n")
    assert readme_tables(text).arguments == [{"arg": "k", "description": "see the docs"}]


def test_a_parse_over_its_cpu_budget_finds_no_tables() -> None:
    assert readme_tables(ARGS, budget_s=0.0).arguments == []
    assert readme_tables(ARGS).arguments == [{"arg": "seed", "type": "int"}]
