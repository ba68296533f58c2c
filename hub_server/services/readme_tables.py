"""The tables of an environment's README: "Environment Arguments" and "Metrics" (the layout ``vf-init`` writes).

A table belongs to the nearest heading above it; a heading that mentions "argument" or
"metric" names the kind. Cells are read as plain text (backticks around names dropped).

Linear in the README and cheap on any input: the document is parsed at block level only
(headings, tables, paragraphs; ~10 ms for 1 MB of ``[``), and inline markup is parsed only in
headings and in the cells of the two tables kept, each cut to a few hundred characters first, so
inline parsing sees a bounded amount of text whatever the README holds. Only the first
:data:`~hub_server.services.readme_html.MAX_README_CHARS` characters are read, and the whole
extraction stops at :data:`TABLES_BUDGET_S` of CPU (finding no tables) as a last guard.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from hub_server.services.markdown_budget import OverBudget, budget_env, with_budget
from hub_server.services.readme_html import MAX_README_CHARS

TABLES_BUDGET_S = 0.5
_MAX_ROWS = 200
_MAX_COLUMNS = 20
_MAX_HEADING_CHARS = 200
_MAX_CELL_CHARS = 1000  # what an environment page shows of a cell at most (services/environments.py)


@dataclass
class Table:
    """A markdown table: lower-cased header names and rows of plain-text cells."""

    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)

    def records(self) -> list[dict[str, str]]:
        """Each row as ``{header name: cell}`` (missing cells are empty)."""
        return [{name: (row[i] if i < len(row) else "") for i, name in enumerate(self.header)} for row in self.rows]


@dataclass
class ReadmeTables:
    """The argument and metric tables found in a README (empty when it has none)."""

    arguments: list[dict[str, str]] = field(default_factory=list)
    metrics: list[dict[str, str]] = field(default_factory=list)


def _block_parser() -> MarkdownIt:
    # Without the core "inline" rule, inline tokens keep their source text and get no children.
    return with_budget(MarkdownIt("commonmark").enable("table").disable("inline"))


def _inline_parser() -> MarkdownIt:
    return with_budget(MarkdownIt("commonmark"))


class _Reader:
    """Inline text of headings and cells, parsed one bounded piece at a time.

    ``env`` is the block parse's: its deadline goes on, and the reference definitions it
    collected (``[name]: url``) resolve in cells as they would in the whole document.
    """

    def __init__(self, env: dict[str, Any]) -> None:
        self.md = _inline_parser()
        self.env = env

    def plain(self, source: str, limit: int) -> str:
        """``source``'s first ``limit`` characters as text: inline markup flattened, code spans kept."""
        parts = []
        for token in self.md.parseInline(source[:limit], self.env):
            for child in token.children or []:
                if child.type in ("softbreak", "hardbreak"):
                    parts.append(" ")
                elif child.type in ("text", "code_inline"):
                    parts.append(child.content)
        return " ".join("".join(parts).split())


def _kind(heading: str) -> str | None:
    if "argument" in heading:
        return "arguments"
    if "metric" in heading:
        return "metrics"
    return None


def _tables_by_kind(tokens: list[Token], reader: _Reader) -> dict[str, Table]:
    """The first table under an "argument" heading and the first under a "metric" one."""
    found: dict[str, Table] = {}
    heading, in_heading = "", False
    kind: str | None = None
    table: Table | None = None  # the table being read, when it is one we keep
    in_table = in_head = False
    row: list[str] = []
    for token in tokens:
        if token.type == "heading_open":
            in_heading = True
        elif token.type == "heading_close":
            in_heading = False
        elif token.type == "inline" and in_heading:
            heading = reader.plain(token.content, _MAX_HEADING_CHARS).lower()
        elif token.type == "table_open":
            in_table = True
            kind = _kind(heading)
            table = Table() if kind is not None and kind not in found else None
        elif token.type == "table_close":
            if table is not None and table.rows and kind is not None:
                found[kind] = table  # a table without rows leaves the place to a later one
            in_table, table = False, None
        elif table is None or not in_table:
            continue  # only the cells of kept tables are parsed
        elif token.type == "thead_open":
            in_head = True
        elif token.type == "thead_close":
            in_head = False
        elif token.type == "tr_open":
            row = []
        elif token.type == "inline" and len(row) < _MAX_COLUMNS and (in_head or len(table.rows) < _MAX_ROWS):
            row.append(reader.plain(token.content, _MAX_CELL_CHARS))
        elif token.type == "tr_close":
            if in_head:
                table.header = [cell.lower() for cell in row]
            elif len(table.rows) < _MAX_ROWS:
                table.rows.append(row)
    return found


def readme_tables(markdown: str, budget_s: float = TABLES_BUDGET_S) -> ReadmeTables:
    """The first argument table and the first metric table of a markdown README."""
    env = budget_env(budget_s)
    try:
        tokens = _block_parser().parse(markdown[:MAX_README_CHARS], env)
        tables = _tables_by_kind(tokens, _Reader(env))
    except OverBudget:
        return ReadmeTables()
    return ReadmeTables(
        arguments=tables["arguments"].records() if "arguments" in tables else [],
        metrics=tables["metrics"].records() if "metrics" in tables else [],
    )
