"""The tables of an environment's README: "Environment Arguments" and "Metrics" (the layout ``vf-init`` writes).

A table belongs to the nearest heading above it; a heading that mentions "argument" or
"metric" names the kind. Cells are read as plain text (backticks around names dropped).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.token import Token

_MAX_ROWS = 200


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


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def _plain(token: Token) -> str:
    """A cell's text: inline markup flattened, code spans kept without their backticks."""
    parts = [" " if child.type in ("softbreak", "hardbreak") else child.content
             for child in token.children or [] if child.type in ("text", "code_inline", "softbreak", "hardbreak")]
    return " ".join("".join(parts).split())


def _tables_by_heading(tokens: list[Token]) -> list[tuple[str, Table]]:
    found: list[tuple[str, Table]] = []
    heading, in_heading = "", False
    table: Table | None = None
    in_head = False
    row: list[str] = []
    for token in tokens:
        if token.type == "heading_open":
            in_heading = True
        elif token.type == "heading_close":
            in_heading = False
        elif token.type == "inline" and in_heading:
            heading = _plain(token).lower()
        elif token.type == "table_open":
            table = Table()
        elif token.type == "thead_open":
            in_head = True
        elif token.type == "thead_close":
            in_head = False
        elif token.type == "tr_open":
            row = []
        elif token.type == "inline" and table is not None:
            row.append(_plain(token))
        elif token.type == "tr_close" and table is not None:
            if in_head:
                table.header = [cell.lower() for cell in row]
            elif len(table.rows) < _MAX_ROWS:
                table.rows.append(row)
        elif token.type == "table_close" and table is not None:
            found.append((heading, table))
            table = None
    return found


def readme_tables(markdown: str) -> ReadmeTables:
    """The first argument table and the first metric table of a markdown README."""
    result = ReadmeTables()
    for heading, table in _tables_by_heading(_parser().parse(markdown)):
        if "argument" in heading and not result.arguments:
            result.arguments = table.records()
        elif "metric" in heading and not result.metrics:
            result.metrics = table.records()
    return result
