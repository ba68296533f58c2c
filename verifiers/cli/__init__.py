"""Command-line entry points: thin typer apps over library calls."""
