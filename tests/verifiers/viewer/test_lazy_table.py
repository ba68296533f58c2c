"""The lazy table: a chunk of rows at first, more as the cursor or scroll nears the end, any row on a jump."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.app import App, ComposeResult

from verifiers.viewer.lazy_table import LazyTable


class _TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield LazyTable(chunk=10, id="table")

    def on_mount(self) -> None:
        table = self.query_one(LazyTable)
        table.add_columns("number")
        table.set_rows(95, lambda number: (Text(f"row {number}"),))
        table.focus()


async def test_rows_are_added_as_they_are_neared_and_on_a_jump() -> None:
    app = _TableApp()
    async with app.run_test(size=(40, 6)) as pilot:
        table = app.query_one(LazyTable)
        assert (table.row_count, table.total) == (10, 95)
        await pilot.press("down")
        assert table.row_count == 21  # the cursor within a chunk of the end: two chunks past it
        table.move_cursor(row=60)
        assert table.cursor_row == 60 and table.row_count == 80
        assert str(table.get_row_at(60)[0]) == "row 60"
        await pilot.press("ctrl+end")
        assert table.row_count == 95 and table.cursor_row == 94 and str(table.get_row_at(94)[0]) == "row 94"
        table.set_rows(3, lambda number: (Text(f"new {number}"),))
        assert [str(table.get_row_at(i)[0]) for i in range(table.row_count)] == ["new 0", "new 1", "new 2"]


async def test_the_wheel_adds_rows_without_moving_the_cursor() -> None:
    app = _TableApp()
    async with app.run_test(size=(40, 6)) as pilot:
        table = app.query_one(LazyTable)
        await pilot.pause()
        table.scroll_to(y=table.max_scroll_y, animate=False)
        await pilot.pause()
        assert table.cursor_row == 0 and table.row_count > 10


def test_a_chunk_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="chunk must be at least 1, not 0"):
        LazyTable(chunk=0)
