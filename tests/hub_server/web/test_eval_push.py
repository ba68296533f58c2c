"""End to end: publish reverse-text, install it from the Hub, ``vf-eval --push``, and see the run on its page."""

from __future__ import annotations

import html
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from markupsafe import escape

from hub_server.client import HubClient, build_dists
from hub_server.context import Hub
from hub_server.services import accounts

REPO = Path(__file__).resolve().parents[3]


def vf_eval(cwd: Path, pythonpath: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    variables = {**os.environ, "PYTHONPATH": os.pathsep.join([str(pythonpath), str(REPO)]), "COLUMNS": "200", **env}
    return subprocess.run([sys.executable, "-m", "verifiers.cli.vf_eval", *args], cwd=cwd, env=variables,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_vf_eval_push_puts_the_run_on_the_environment_page(live_url: str, hub: Hub, make_user: Callable[[str], str],
                                                          serve: Callable[..., str], tmp_path: Path) -> None:
    from tests.hub_server.clients import run

    token = make_user("alice")
    with HubClient(live_url, token) as client:
        for dist in build_dists(REPO / "environments" / "reverse_text", tmp_path / "dist", isolated=False):
            client.upload(dist)
        info = client.info("alice", "reverse-text")
    # Installed from the Hub exactly as the page's pip command does it, into a folder put first on the path.
    site = tmp_path / "site"
    run(sys.executable, "-m", "pip", "--isolated", "install", "-q", "--no-deps", "--no-cache-dir", "--target",
        str(site), shlex.split(info["install"]["pip"])[2])
    model_url = serve("reverse")

    done = vf_eval(tmp_path, site, {"VF_HUB_TOKEN": token}, "reverse-text", "-m", "scripted-reverse", "-b", model_url,
                   "-n", "4", "-r", "2", "--push", "--hub", live_url)
    assert done.returncode == 0, done.stdout + done.stderr
    pushed = re.search(rf"pushed to alice/reverse-text@0\.1\.0 with 8 of 8 rollouts: ({live_url}/alice/reverse-text"
                       r"/evals/\d+)", done.stdout)
    assert pushed, done.stdout
    [run_dir] = (tmp_path / "outputs" / "evals").glob("*/*")
    avg_reward = json.loads((run_dir / "metadata.json").read_text())["avg_reward"]

    page = httpx.get(f"{live_url}/alice/reverse-text").text
    board = page[page.index('id="leaderboard"'):page.index('id="versions"')]
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", board)).split())
    assert "scripted-reverse v0.1.0 · 4 × 2" in text and f"{avg_reward:.3f}" in text
    # "verified" is never shown on the client's word (the sha256 it reports); only the worker's re-scoring vouches
    assert "alice owner" in text and re.search(r"(?<!un)verified", text) is None
    assert "alice owner unverified" in text  # no worker has re-scored it: the figures are the pusher's word
    assert "lcs_reward" in text  # the metric columns
    [result] = httpx.get(f"{live_url}/api/v1/projects/alice/reverse-text/evals").json()["results"]
    assert result["artifact_verified"] is True
    assert "scripted-reverse" in httpx.get(f"{live_url}/api/v1/evals/{result['id']}").json()["summary"]
    # The result's page lists its 8 rollouts; each opens on its transcript (the prompt's text, the reply).
    listing = httpx.get(pushed.group(1)).text
    assert listing.count("/rollouts/") == 8 and "all <span class=\"count\">8</span>" in listing
    first = httpx.get(f"{pushed.group(1)}/rollouts/0").text
    shown = re.search(r"example (\d+) · rollout (\d+)", first)
    assert shown, first
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    [record] = [r for r in records if (r["example_id"], r["rollout_index"]) == tuple(map(int, shown.groups()))]
    assert str(escape(record["completion"][-1]["content"])) in first  # as the page's templates escape it
    assert str(escape(record["prompt"][-1]["content"])) in first

    # A read-only token: the run completes and is saved, the push is refused with the Hub's reason.
    with hub.db.write() as session:
        read_only = accounts.issue_token(session, accounts.get_owner(session, "alice"), "read", expires_in=None)
    refused = vf_eval(tmp_path, site, {"VF_HUB_TOKEN": read_only}, "reverse-text", "-m", "other-model", "-b",
                      model_url, "-n", "2", "-r", "1", "--push", "--hub", live_url)
    assert refused.returncode == 1 and "push failed" in refused.stdout and "publish token" in refused.stdout
    assert len(list((tmp_path / "outputs" / "evals").glob("*/*"))) == 2  # saved all the same

    # No token at all: refused before the run starts.
    no_token = vf_eval(tmp_path, site, {"VF_HUB_TOKEN": ""}, "reverse-text", "-m", "third", "-b", model_url,
                       "--push", "--hub", live_url)
    assert no_token.returncode == 2 and "--push needs an API token" in no_token.stdout
    assert len(list((tmp_path / "outputs" / "evals").glob("*/*"))) == 2
