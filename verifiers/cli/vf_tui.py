"""``vf-tui [OUTPUTS_DIR]``: browse the runs ``vf-eval`` wrote (default ``./outputs``) in the terminal.

A thin entry over :mod:`verifiers.viewer`: it finds the runs, says in one line (exit 2) when there are none or
when the ``tui`` extra (Textual) is missing, and starts :class:`verifiers.viewer.app.ViewerApp`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from verifiers.errors import MissingDependencyError
from verifiers.optional import import_optional

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
_INSTALL = "pip install -e '.[tui]' in a checkout, or pip install 'verifiers[tui]'"


def _fail(message: str) -> None:
    print(f"vf-tui: error: {message}", file=sys.stderr)
    raise typer.Exit(2)


@app.command()
def tui_command(
    outputs_dir: Path = typer.Argument(Path("outputs"), help="The folder vf-eval wrote to (its -o; default "
                                       "./outputs), or one run's folder."),
) -> None:
    """Browse evaluation runs: the run list, a run's rollouts, a rollout's transcript."""
    try:
        import_optional("textual", "vf-tui", _INSTALL)
    except MissingDependencyError as error:
        _fail(str(error))
    from verifiers.viewer.runs import discover_runs

    if not outputs_dir.is_dir():
        _fail(f"{outputs_dir} is not a folder: run vf-eval first, or pass the folder it wrote to (its -o)")
    discovery = discover_runs(outputs_dir)
    if not discovery.runs:
        _fail(f"no evaluation runs under {outputs_dir} (vf-eval writes them to "
              "OUTPUTS_DIR/evals/<env>--<model>/<run_id>/)")
    from verifiers.viewer.app import ViewerApp

    ViewerApp(discovery, outputs_dir).run()


def main() -> None:
    app(prog_name="vf-tui")


if __name__ == "__main__":
    main()
