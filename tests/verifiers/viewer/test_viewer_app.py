"""The viewer driven by Textual's pilot: navigation, the reward filter, jumping to errors, and text from results
shown literally (never read as markup)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widgets import DataTable, Input, Static

from verifiers.viewer.app import ViewerApp
from verifiers.viewer.runs import discover_runs
from verifiers.viewer.screens import RolloutsScreen, RunsScreen, TranscriptScreen

SIZE = (140, 45)


def _app(outputs: Path) -> ViewerApp:
    return ViewerApp(discover_runs(outputs), outputs)


def _cells(table: DataTable, column: int) -> list[str]:
    return [str(table.get_row_at(i)[column]) for i in range(table.row_count)]


def _texts(screen) -> str:
    return "\n".join(str(widget.render()) for widget in screen.query(Static))


async def _open_first_run(pilot) -> DataTable:
    """Enter on the run list; the rollouts table of the run it opened."""
    await pilot.press("enter")
    await pilot.pause()
    return pilot.app.screen.query_one("#rollouts", DataTable)


def _mixed_run(write_run, make_rollout) -> Path:
    """Six rollouts: rewards 0, 1, 0.25, 1, 0 and 0.75; rollouts 2 and 4 errored."""
    rewards = [0.0, 1.0, 0.25, 1.0, 0.0, 0.75]
    outputs = [make_rollout(i, 0, reward, f"answer {i}", error="ModelError: 503" if i in (2, 4) else None)
               for i, reward in enumerate(rewards)]
    return write_run(outputs)


async def test_run_list_to_rollouts_to_transcript_and_back(tmp_path: Path, write_run, make_rollout) -> None:
    _mixed_run(write_run, make_rollout)
    write_run(env="other", run_id="older", date="2025-01-01T00:00:00+00:00")
    app = _app(tmp_path / "outputs")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        runs = app.screen.query_one("#runs", DataTable)
        assert _cells(runs, 0) == ["toy", "other"] and _cells(runs, 3) == ["6 × 1", "4 × 1"]
        assert _cells(runs, 5) == ["complete", "complete"]
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, RolloutsScreen)
        rollouts = app.screen.query_one("#rollouts", DataTable)
        assert _cells(rollouts, 1) == ["0", "1", "2", "3", "4", "5"]
        assert _cells(rollouts, 4)[2] == "✗ ModelError: 503"
        await pilot.press("down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, TranscriptScreen)
        assert len(app.screen.query("#transcript Static")) == 1  # one widget for the whole transcript
        shown = _texts(app.screen)
        for expected in ("example 1 · rollout 0", "reward  1.000", "exact  1.000", "system", "Reverse the word.",
                         "tool call · call_0", 'reverse_word({"w": "x"})', "tool result · call_0", "answer 1"):
            assert expected in shown
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, RolloutsScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, RunsScreen)


async def test_the_filter_cycles_and_takes_a_typed_minimum(tmp_path: Path, write_run, make_rollout) -> None:
    _mixed_run(write_run, make_rollout)
    app = _app(tmp_path / "outputs")
    async with app.run_test(size=SIZE) as pilot:
        table = await _open_first_run(pilot)
        screen = app.screen
        await pilot.press("f")
        assert _cells(table, 3) == ["1.000", "1.000", "0.750"]
        assert "3 of 6 rollouts shown (reward ≥ 0.5)" in _texts(screen)
        await pilot.press("f")
        assert _cells(table, 3) == ["0.000", "0.250", "0.000"]
        await pilot.press("f")
        assert table.row_count == 6
        await pilot.press("m", *"abc", "enter")
        assert "not a number: 'abc'" in _texts(screen) and screen.query_one("#minimum", Input).display
        await pilot.press("escape")  # cancels the field, stays on the rollouts
        assert app.screen is screen and not screen.query_one("#minimum", Input).display
        await pilot.press("m", *"2.5e-1", "enter")  # letters typed in the field are text, not the screen's keys
        assert _cells(table, 3) == ["1.000", "0.250", "1.000", "0.750"] and "reward ≥ 0.25" in _texts(screen)
        await pilot.press("m", *"0.9", "enter")
        await pilot.pause()
        assert _cells(table, 3) == ["1.000", "1.000"] and "reward ≥ 0.9" in _texts(screen)
        await pilot.press("enter")  # the first row shown: example 1
        await pilot.pause()
        assert "example 1 · rollout 0" in _texts(app.screen)


async def test_next_error_jumps_and_wraps(tmp_path: Path, write_run, make_rollout) -> None:
    _mixed_run(write_run, make_rollout)
    app = _app(tmp_path / "outputs")
    async with app.run_test(size=SIZE) as pilot:
        table = await _open_first_run(pilot)
        await pilot.press("e")
        assert table.cursor_row == 2
        await pilot.press("e")
        assert table.cursor_row == 4
        await pilot.press("e")
        assert table.cursor_row == 2
        await pilot.press("enter")
        await pilot.pause()
        assert "ModelError: 503" in _texts(app.screen)
        await pilot.press("escape", "f", "e")  # reward ≥ 0.5 hides both errored rollouts
        assert "no errored rollout among those shown" in _texts(app.screen)


async def test_text_from_results_is_never_markup(tmp_path: Path, write_run, make_rollout) -> None:
    hostile = "[bold]not bold[/bold] [/] [link=http://x]y[/link] [red"
    outputs = [make_rollout(0, 0, 1.0, hostile, error=f"Boom: {hostile}")]
    write_run(outputs, env="[b]env[/]", model="[/]")
    app = _app(tmp_path / "outputs")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        runs = app.screen.query_one("#runs", DataTable)
        assert _cells(runs, 0) == ["[b]env[/]"] and _cells(runs, 1) == ["[/]"]
        await pilot.press("enter")
        await pilot.pause()
        assert "[b]env[/] · [/]" in _texts(app.screen)
        cell = app.screen.query_one("#rollouts", DataTable).get_row_at(0)[4]
        assert isinstance(cell, Text) and cell.plain == f"✗ Boom: {hostile}" and cell.spans == []
        await pilot.press("enter")
        await pilot.pause()
        shown = _texts(app.screen)
        assert shown.count(hostile) == 2  # the answer and the error, each as written
        assert "tool said [red]hi[/red]" in shown


async def test_a_corrupt_line_and_a_missing_metadata_are_rows(tmp_path: Path, write_run) -> None:
    run_dir = write_run()
    with (run_dir / "results.jsonl").open("a") as file:
        file.write('{"example_id": 7, "rew')
    bare = tmp_path / "outputs" / "evals" / "lost--m" / "x"
    bare.mkdir(parents=True)
    (bare / "results.jsonl").write_text("garbage\n")
    app = _app(tmp_path / "outputs")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        runs = app.screen.query_one("#runs", DataTable)
        assert _cells(runs, 0) == ["toy", "lost"] and _cells(runs, 5) == ["complete", "error"]
        assert "no metadata.json" in _cells(runs, 6)[1]
        await pilot.press("enter")
        await pilot.pause()
        table = app.screen.query_one("#rollouts", DataTable)
        assert table.row_count == 5 and "not valid JSON" in _cells(table, 4)[4]
        await pilot.press("e", "enter")
        await pilot.pause()
        assert isinstance(app.screen, TranscriptScreen) and "line 5 cannot be shown" in _texts(app.screen)
        await pilot.press("escape", "escape", "down", "enter")
        await pilot.pause()
        assert "1 errored" in _texts(app.screen)
