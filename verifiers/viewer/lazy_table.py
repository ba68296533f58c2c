"""A ``DataTable`` that adds its rows a chunk at a time, as the cursor or the scroll comes near the last one added.

Textual's ``DataTable`` measures every cell of every row it is given on its next idle (0.2-0.45 ms a row), so a
run of 10,000 rollouts put in whole costs seconds before its first row can be used. Here the rows are made and
added only when they could be seen: the first chunk when the rows are set, the next whenever the cursor or the
scroll comes within a chunk of the end, and up to any row a program or Ctrl+End moves the cursor to.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable

CHUNK = 200
"""Rows added at a time: a few screens' worth, so scrolling never meets the end of what is added."""

Cells = Callable[[int], Sequence[Text]]


class LazyTable(DataTable[Text]):
    """Rows ``0 .. count - 1`` made by ``cells(number)`` and keyed ``str(number)``, added as they are neared."""

    def __init__(self, *, chunk: int = CHUNK, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        if chunk < 1:
            raise ValueError(f"chunk must be at least 1, not {chunk}")
        self.chunk = chunk
        self.total = 0
        self._cells: Cells = lambda number: ()
        self._adding = False

    def set_rows(self, count: int, cells: Cells) -> None:
        """Replace every row by ``count`` rows; only the first chunk is made now."""
        self.total = 0  # clear() moves the cursor: its watcher must not add old rows meanwhile
        self.clear()
        self.total = count
        self._cells = cells
        self._add_until(self.chunk)

    def _add_until(self, end: int) -> None:
        """Make and add the rows before ``end`` (at most ``total``) that are not added yet."""
        if self._adding:  # add_row sets the cursor again, and its watcher lands here
            return
        self._adding = True
        try:
            for number in range(self.row_count, min(end, self.total)):
                self.add_row(*self._cells(number), key=str(number))
        finally:
            self._adding = False

    def _near_the_end(self, row: int) -> None:
        if row + self.chunk > self.row_count:
            self._add_until(row + 2 * self.chunk)

    def move_cursor(self, *, row: int | None = None, column: int | None = None, animate: bool = False,
                    scroll: bool = True) -> None:
        """Move the cursor as ``DataTable`` does, to any of the ``total`` rows, added or not yet."""
        if row is not None:
            self._near_the_end(row)
        super().move_cursor(row=row, column=column, animate=animate, scroll=scroll)

    def action_scroll_bottom(self) -> None:
        """Ctrl+End goes to the last row of all, not the last one added so far."""
        self._add_until(self.total)
        super().action_scroll_bottom()

    def watch_cursor_coordinate(self, old_coordinate: Coordinate, new_coordinate: Coordinate) -> None:
        super().watch_cursor_coordinate(old_coordinate, new_coordinate)
        if old_coordinate != new_coordinate:
            self._near_the_end(new_coordinate.row)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value >= self.max_scroll_y - self.chunk // 2:  # the wheel and the scroll bar move no cursor
            self._add_until(self.row_count + self.chunk)


__all__ = ["CHUNK", "LazyTable"]
