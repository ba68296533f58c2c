"""The node process's command line: follows real relays to a step; bad settings exit 2 before any fetch."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from tests.trainer_adapter.broadcast.conftest import make_checkpoint, same_files
from trainer_adapter.broadcast.node import main
from trainer_adapter.broadcast.publisher import Publisher

app = typer.Typer(add_completion=False)
app.command()(main)


def test_the_node_follows_the_relays_until_the_step(relays, tmp_path: Path) -> None:
    urls = [r.url for r in relays]
    ckpt = make_checkpoint(tmp_path / "ckpt", 1, {"model.safetensors": 300_000, "config.json": 10})

    async def publish() -> None:
        async with Publisher(urls, shard_size=65536) as publisher:
            await publisher.publish(ckpt, 3)

    asyncio.run(publish())
    args = [f"relays={json.dumps(urls)}", f"fetch_dir='{tmp_path / 'node'}'", "poll_interval_s=0.05",
            "--until-step", "3"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "loaded step 3" in result.output
    assert same_files(tmp_path / "node" / "step_3", ckpt)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (['relays=["10.0.0.5:8101"]'], "is not an http:// or https:// URL with a host"),
        (["relays=[]"], "no relays"),
        (['relay=["http://a/"]'], "unknown config key 'relay'; did you mean 'relays'?"),
        (['relays=["http://a/"]', "keep_versions=0"], "keep_versions"),
        (["relays"], "is not KEY=VALUE"),
    ],
)
def test_bad_settings_exit_2_with_the_problem(args: list[str], message: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [*args, f"fetch_dir='{tmp_path}'"])
    assert result.exit_code == 2
    assert message in result.output
    assert list(tmp_path.iterdir()) == []  # nothing was fetched or made
