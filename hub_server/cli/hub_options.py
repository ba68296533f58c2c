"""What ``vf-hub``'s command modules share: the common options, the settings they name, and the one-line failure."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from hub_server.errors import BadRequest
from hub_server.settings import Settings


def _help(field: str) -> str:
    return Settings.model_fields[field].description or ""


HubOpt = Annotated[str | None, typer.Option("--hub", help="Hub URL (default: VF_HUB_URL, login, or local).")]
TokenOpt = Annotated[str | None, typer.Option("--token", help="API token (default: VF_HUB_TOKEN or login).")]
DataDirOpt = Annotated[Path | None, typer.Option("--data-dir", help=_help("data_dir"))]
DbOpt = Annotated[str | None, typer.Option("--database-url", help=_help("database_url"))]


def _fail(error: Exception) -> typer.Exit:
    """Print one clear line; exit 2 for bad input (as vf-init does), 1 for everything else."""
    typer.echo(f"vf-hub: error: {error}", err=True)
    return typer.Exit(code=2 if isinstance(error, BadRequest) else 1)


def _settings(data_dir: Path | None, database_url: str | None) -> Settings:
    overrides: dict[str, Any] = {}
    if data_dir is not None:
        overrides["data_dir"] = data_dir
    if database_url is not None:
        overrides["database_url"] = database_url
    return Settings(**overrides)


__all__ = ["DataDirOpt", "DbOpt", "HubOpt", "TokenOpt", "_fail", "_help", "_settings"]
