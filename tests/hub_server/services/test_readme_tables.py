"""Reading the argument and metric tables out of a README."""

from __future__ import annotations

from pathlib import Path

from hub_server.services.readme_tables import readme_tables

REPO = Path(__file__).resolve().parents[3]


def test_the_reference_environments_readme_tables() -> None:
    tables = readme_tables((REPO / "environments" / "reverse_text" / "README.md").read_text())
    assert [row["arg"] for row in tables.arguments] == [
        "num_train_examples", "num_eval_examples", "min_len", "max_len", "seed"]
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
