"""The viewer's three screens: the run list, one run's rollouts, one rollout's transcript.

Every text that comes from a run folder is handed to Textual as a ``rich.text.Text`` (a table cell, a
``Static``): Textual reads a plain ``str`` there as markup, and a completion saying ``[bold]`` or ``[/]`` must
show those characters, not restyle the screen or fail to parse. And every such text goes through
:func:`~verifiers.viewer.printable.printable` (:func:`_shown`): terminal escapes in it are shown, not obeyed.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import JustifyMethod
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from verifiers.viewer.lazy_table import LazyTable
from verifiers.viewer.printable import printable
from verifiers.viewer.reward_filter import RewardFilter
from verifiers.viewer.rollouts import Limits, RolloutIndex, RolloutRow, in_example_order, load_rollouts, read_rollout
from verifiers.viewer.runs import RESULTS, Discovery, RunSummary
from verifiers.viewer.transcript import Block, Kind, transcript_blocks

_NOTE_CHARS = 120
_INDENT = "  "
_STYLES: dict[Kind, str] = {
    "scores": "bold magenta", "error": "bold red", "system": "bold yellow", "user": "bold green",
    "assistant": "bold cyan", "tool": "bold blue", "tool_call": "bold blue", "other": "bold", "note": "bold red",
}


def _shown(text: str, style: str = "", justify: JustifyMethod | None = None) -> Text:
    """Text from a run folder (or its path) as a ``Text``, with its control characters made visible."""
    return Text(printable(text), style=style, justify=justify)


def _one_line(text: str, limit: int = _NOTE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _reward(value: float | None) -> Text:
    return Text("-" if value is None else f"{value:.3f}", justify="right")


class RunsScreen(Screen[None]):
    """Every run found, newest first; Enter opens one."""

    BINDINGS = [Binding("q", "app.quit", "quit")]

    def __init__(self, discovery: Discovery, outputs_dir: Path) -> None:
        super().__init__()
        self.discovery = discovery
        self.outputs_dir = outputs_dir

    def compose(self) -> ComposeResult:
        count = len(self.discovery.runs)
        heading = f"{count} run{'s' if count != 1 else ''} under {self.outputs_dir}"
        if self.discovery.truncated:
            heading += " (the search stopped early: too many folders; pass a narrower OUTPUTS_DIR)"
        yield Static(_shown(heading, style="bold"), id="heading")
        yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#runs", DataTable)
        table.add_columns("env", "model", "date", "examples × rollouts", "mean reward", "status", "note")
        for number, run in enumerate(self.discovery.runs):
            note = run.problem or run.error or ""
            status_style = {"complete": "green", "running": "yellow"}.get(run.status, "red")
            table.add_row(_shown(run.env_id), _shown(run.model), _shown(run.date), _shown(run.size),
                          _reward(run.avg_reward), _shown(run.status, style=status_style),
                          _shown(_one_line(note), style="red" if note else ""), key=str(number))
        table.focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        run = self.discovery.runs[int(str(event.row_key.value))]
        self.app.push_screen(RolloutsScreen(run))


class RolloutsScreen(Screen[None]):
    """One run's rollouts: filter by reward, jump to the next errored one, Enter shows its transcript."""

    BINDINGS = [
        Binding("escape", "back", "back"),
        Binding("f", "cycle_filter", "filter ≥/</all"),
        Binding("m", "ask_minimum", "minimum reward"),
        Binding("e", "next_error", "next error"),
        Binding("q", "app.quit", "quit"),
    ]

    def __init__(self, run: RunSummary, limits: Limits = Limits()) -> None:
        super().__init__()
        self.run = run
        self.limits = limits
        self.index: RolloutIndex = load_rollouts(run.path / RESULTS, limits)
        self.ordered = in_example_order(self.index.rows)
        threshold = run.pass_threshold if run.pass_threshold is not None else 0.5
        self.reward_filter = RewardFilter(threshold=threshold)
        self.shown: list[RolloutRow] = []
        self.status_message = ""

    def compose(self) -> ComposeResult:
        title = f"{self.run.env_id} · {self.run.model} · {self.run.date} · {self.run.size} · {self.run.status}"
        yield Static(_shown(title, style="bold"), id="title")
        yield Static(id="status")
        yield LazyTable(id="rollouts")
        yield Input(placeholder="minimum reward, then Enter (Esc: cancel)", id="minimum")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#minimum", Input).display = False
        table = self.query_one("#rollouts", LazyTable)
        table.add_columns("line", "example", "rollout", "reward", "error")
        self._fill()
        table.focus()

    def _fill(self) -> None:
        self.shown = [row for row in self.ordered if self.reward_filter.matches(row)]
        self.query_one("#rollouts", LazyTable).set_rows(len(self.shown), self._cells)
        self._show_status()

    def _cells(self, number: int) -> tuple[Text, ...]:
        row = self.shown[number]
        mark = row.problem or row.error
        return (Text(str(row.line), justify="right"), _shown(row.example_id), _shown(row.rollout_index),
                _reward(row.reward), _shown(f"✗ {_one_line(mark)}" if mark else "", style="red"))

    def _show_status(self) -> None:
        failed = sum(row.failed for row in self.index.rows)
        parts = [f"{len(self.shown)} of {len(self.index.rows)} rollouts shown ({self.reward_filter.describe()})",
                 f"{failed} errored"]
        lines = [" · ".join(parts), *self.index.notes]
        if self.status_message:
            lines.append(self.status_message)
        self.query_one("#status", Static).update(_shown("\n".join(lines)))

    def action_back(self) -> None:
        if self.query_one("#minimum", Input).display:  # Esc in the minimum field cancels it, and stays
            self._close_input()
            return
        self.app.pop_screen()

    def action_cycle_filter(self) -> None:
        self.reward_filter = self.reward_filter.cycled()
        self.status_message = ""
        self._fill()

    def action_ask_minimum(self) -> None:
        field = self.query_one("#minimum", Input)
        field.display = True
        field.value = ""
        field.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        try:
            minimum = float(text)
        except ValueError:
            self.status_message = f"not a number: {text!r}"
            self._show_status()
            return
        self.reward_filter = self.reward_filter.at_least(minimum)
        self.status_message = ""
        self._close_input()
        self._fill()

    def _close_input(self) -> None:
        self.query_one("#minimum", Input).display = False
        self.query_one("#rollouts", DataTable).focus()

    def action_next_error(self) -> None:
        table = self.query_one("#rollouts", DataTable)
        start = table.cursor_row if self.shown else 0
        count = len(self.shown)
        for step in range(1, count + 1):
            number = (start + step) % count
            if self.shown[number].failed:
                table.move_cursor(row=number)
                self.status_message = ""
                self._show_status()
                return
        self.status_message = "no errored rollout among those shown"
        self._show_status()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        row = self.shown[int(str(event.row_key.value))]
        self.app.push_screen(TranscriptScreen(self.index.path, row, self.limits))


def transcript_text(blocks: list[Block]) -> Text:
    """Every block as one ``Text``: its title styled by kind, its body's lines indented under it.

    One widget for the whole transcript, not two per block: each widget costs a few milliseconds to mount and lay
    out, and a rollout of a few tool turns has dozens of blocks.
    """
    text = Text()
    for number, block in enumerate(blocks):
        if number:
            text.append("\n\n")
        text.append(printable(block.title), style=_STYLES[block.kind])
        for line in printable(block.body).split("\n"):
            text.append(f"\n{_INDENT}{line}")
    return text


class TranscriptScreen(Screen[None]):
    """One rollout: its reward and metrics, then each message, tool call and tool result."""

    BINDINGS = [Binding("escape", "back", "back"), Binding("q", "app.quit", "quit")]

    def __init__(self, path: Path, row: RolloutRow, limits: Limits) -> None:
        super().__init__()
        self.path = path
        self.row = row
        self.limits = limits

    def compose(self) -> ComposeResult:
        try:
            blocks = transcript_blocks(read_rollout(self.path, self.row, self.limits))
        except ValueError as error:
            blocks = [Block("error", f"line {self.row.line} cannot be shown", str(error))]
        with VerticalScroll(id="transcript"):
            yield Static(transcript_text(blocks), id="blocks")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#transcript", VerticalScroll).focus()

    def action_back(self) -> None:
        self.app.pop_screen()


__all__ = ["RolloutsScreen", "RunsScreen", "TranscriptScreen"]
