"""The ``vf-tui`` Textual application: it opens on the run list (:mod:`verifiers.viewer.screens`)."""

from __future__ import annotations

from pathlib import Path

from textual.app import App

from verifiers.viewer.runs import Discovery
from verifiers.viewer.screens import RunsScreen


class ViewerApp(App[None]):
    """Browse the runs in ``discovery``: Enter opens, Esc goes back, q quits."""

    TITLE = "vf-tui"
    CSS = """
    #heading, #title { padding: 0 1; }
    #status { padding: 0 1; color: $text-muted; }
    DataTable { height: 1fr; }
    #transcript { padding: 0 1; }
    .title { margin-top: 1; }
    .body { padding-left: 2; }
    """

    def __init__(self, discovery: Discovery, outputs_dir: Path) -> None:
        super().__init__()
        self.discovery = discovery
        self.outputs_dir = outputs_dir

    def on_mount(self) -> None:
        self.push_screen(RunsScreen(self.discovery, self.outputs_dir))


__all__ = ["ViewerApp"]
