"""The process beside each inference server: follows the relays and loads every new version into the server::

    python -m trainer_adapter.broadcast.node relays='["http://10.0.0.5:8101/"]' --server http://127.0.0.1:8000/v1

Settings are ``BroadcastConfig``'s (KEY=VALUE, or a TOML file of them with ``--config``); bad ones exit 2
with one line per problem before anything is fetched. Without ``--server`` versions are fetched and verified
into ``fetch_dir`` but loaded nowhere (a dry run of the network path).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Annotated

import typer

from trainer_adapter.broadcast.config import BroadcastConfig
from trainer_adapter.broadcast.fetcher import Fetcher
from trainer_adapter.config import load_config, parse_override
from trainer_adapter.inference.weights_client import WeightsClient
from verifiers.errors import UsageError


async def follow(config: BroadcastConfig, server: str | None, until_step: int | None) -> int | None:
    """Load versions as the relays announce them; returns the loaded step once ``until_step`` is reached."""
    weights = WeightsClient(server) if server else None
    try:
        async with Fetcher.from_config(config, weights) as fetcher:
            await fetcher.follow(until_step=until_step)
            return fetcher.loaded_step
    finally:
        if weights is not None:
            await weights.aclose()


def main(
    overrides: Annotated[list[str] | None, typer.Argument(help="KEY=VALUE BroadcastConfig settings.")] = None,
    config: Annotated[Path | None, typer.Option(help="TOML file with BroadcastConfig keys.")] = None,
    server: Annotated[str | None, typer.Option(help="The inference server's URL (its /v1 or its root).")] = None,
    until_step: Annotated[int | None, typer.Option(help="Exit once this step (or a newer one) is loaded.")] = None,
) -> None:
    """Fetch each new weights version from the relays and load it into the inference server."""
    try:
        settings = load_config(BroadcastConfig, config, dict(parse_override(o) for o in overrides or []))
    except UsageError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if not settings.enabled:
        typer.echo("error: no relays: set relays=[...] (BroadcastConfig.relays)", err=True)
        raise typer.Exit(2)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    for chatty in ("httpx", "httpx2"):  # a line per poll of every relay would bury the versions loaded
        logging.getLogger(chatty).setLevel(logging.WARNING)
    loaded = asyncio.run(follow(settings, server, until_step))
    typer.echo(f"loaded step {loaded}")


if __name__ == "__main__":
    typer.run(main)
