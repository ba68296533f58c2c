"""An environment that needs sandboxes of its own, through the real ``vf-hub worker check`` process: the bundled
humaneval package (a CodeEnv) installs and loads in the check's sandbox but cannot start sandboxes there, so
its check is "not checked: needs sandboxes" — neutral on the page, in the JSON API, never yanked by the owner's
policy — and its pushed results are not re-scorable. The check had been claimed by a worker that died: the
real worker takes it back after the lease."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from hub_server import Settings
from hub_server.cli.vf_hub import app
from hub_server.client import HubClient, build_dists
from hub_server.db import Database
from hub_server.db.checks import ServerCheck
from hub_server.services import server_checks
from tests.hub_server.conftest import bearer
from tests.hub_server.web.test_browser import CHROMIUM, browser_page  # noqa: F401 (a fixture)
from tests.hub_server.worker.test_worker_e2e import _check, _run_worker, hub  # noqa: F401 (a fixture)

REPO = Path(__file__).resolve().parents[3]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is missing: run scripts/setup_browser.sh"),
]


def _die_holding_the_check(data_dir: Path) -> int:
    """A worker claims the queued check and dies: its claim is an hour old, past the default 30-minute lease."""
    db = Database(Settings(data_dir=data_dir, database_url=None).resolved_database_url())
    try:
        claimed = server_checks.claim(db, stale_after_s=1800)
        assert claimed is not None and claimed.project == "humaneval", claimed
        with db.write() as session:
            session.execute(update(ServerCheck).where(ServerCheck.id == claimed.id)
                            .values(started_at=dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=1)))
        return claimed.id
    finally:
        db.dispose()


def _attempts(data_dir: Path, check_id: int) -> int:
    db = Database(Settings(data_dir=data_dir, database_url=None).resolved_database_url())
    try:
        with db.read() as session:
            check = session.get(ServerCheck, check_id)
            assert check is not None
            return check.attempts
    finally:
        db.dispose()


def _push(url: str, token: str) -> int:
    rollouts = [{"example_id": 0, "reward": 1.0, "answer": "", "prompt": [{"role": "user", "content": "stub"}],
                 "completion": [{"role": "assistant", "content": "```python\ndef f():\n    return 1\n```"}]}]
    metadata = {"model": "scripted", "status": "complete", "avg_reward": 1.0, "num_examples": 1,
                "rollouts_per_example": 1}
    answer = httpx.post(f"{url}/api/v1/evals", headers=bearer(token), timeout=30,
                        json={"project": "humaneval", "version": "0.1.0", "metadata": metadata, "rollouts": rollouts})
    assert answer.status_code == 201, answer.text
    return int(answer.json()["id"])


def test_humaneval_is_not_checked_for_want_of_sandboxes_and_never_yanked(
        hub: tuple[str, str, Path], check_image: Path, tmp_path: Path, browser_page: Any) -> None:  # noqa: F811
    url, token, data_dir = hub
    with HubClient(url, token) as client:
        for dist in build_dists(REPO / "environments" / "humaneval", tmp_path / "dist", isolated=False):
            client.upload(dist)
    policy = CliRunner().invoke(app, ["project", "set-policy", "alice/humaneval", "--refuse-failing-checks",
                                      "--hub", url, "--token", token])
    assert policy.exit_code == 0, policy.output
    dead = _die_holding_the_check(data_dir)
    result = _push(url, token)

    _run_worker(data_dir, check_image)

    check = _check(url, "humaneval")
    assert check["status"] == "needs-sandboxes", check
    assert check["summary"].startswith("not checked: HumanEvalEnv runs its rollouts in sandboxes of its own")
    assert check["report"]["needs_sandboxes"] == ["HumanEvalEnv"] and check["report"]["timings"]["install_s"] > 0
    assert _attempts(data_dir, dead) == 2  # the dead worker's claim, taken back and finished
    info = httpx.get(f"{url}/api/v1/projects/alice/humaneval").json()
    assert info["refuse_failing_checks"] and not info["versions"][0]["yanked"]
    board = {r["id"]: r for r in httpx.get(f"{url}/api/v1/projects/alice/humaneval/evals").json()["results"]}
    assert board[result]["rescore"] == "not-rescorable", board[result]
    assert "runs code in sandboxes of its own (HumanEvalEnv)" in board[result]["rescore_summary"]

    page = browser_page
    page.goto(f"{url}/alice/humaneval/versions/0.1.0")
    badge = page.locator("#server-check-badge")
    assert badge.inner_text() == "Hub check: not checked: needs sandboxes"
    assert badge.get_attribute("class") == "badge "  # neutral: neither the passed nor the failed colour
    assert page.locator("#server-check-status").inner_text() == "not checked: needs sandboxes"
    assert "the wheel installed and load_environment returned it" in page.locator("#server-check-summary").inner_text()
