"""The Hub's own checks end to end: a ``vf-hub serve`` process, uploads over HTTP, the ``vf-hub worker check``
process running each in the real local sandbox, and the outcome on the version pages in headless Chromium,
in the JSON API, and on pushed results (re-scored only when the rewards match)."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hub_server import Settings
from hub_server.db import Database
from hub_server.services import accounts
from hub_server.testing.dists import upload_form
from tests.hub_server.conftest import basic, bearer
from tests.hub_server.test_workers import _serve, _wait_healthy
from tests.hub_server.web.test_browser import CHROMIUM, browser_page  # noqa: F401 (a fixture)
from tests.hub_server.worker.envs import env_wheel

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is missing: run scripts/setup_browser.sh"),
]


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """One Hub process on its own data folder: its URL, alice's publish token, the folder."""
    tmp_path = tmp_path_factory.mktemp("checks")
    data_dir = tmp_path / "hub"
    db = Database(Settings(data_dir=data_dir, database_url=None).resolved_database_url())
    db.migrate()
    with db.write() as session:
        _, token = accounts.create_user(session, "alice", dt.timedelta(days=1))
    db.dispose()
    process, url = _serve(data_dir, tmp_path / "server.log")
    try:
        _wait_healthy(process, url, tmp_path / "server.log")
        yield url, token, data_dir
    finally:
        process.terminate()
        process.wait(timeout=30)


def _upload(url: str, token: str, wheel: Path, name: str) -> httpx.Response:
    with wheel.open("rb") as handle:
        return httpx.post(f"{url}/legacy/", data=upload_form(wheel, name, "0.1.0"), headers=basic(token),
                          files={"content": (wheel.name, handle)}, timeout=60)


def _run_worker(data_dir: Path, image: Path) -> None:
    vf_hub = Path(sys.executable).parent / "vf-hub"
    done = subprocess.run([str(vf_hub), "worker", "check", "--until-idle", "--data-dir", str(data_dir),
                           "--image-dir", str(image), "--time-limit", "120"],
                          capture_output=True, text=True, timeout=600, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]


def _check(url: str, name: str) -> dict[str, Any]:
    info = httpx.get(f"{url}/api/v1/projects/alice/{name}").json()
    return info["versions"][0]["server_check"]


def _push(url: str, token: str, name: str, completion: str, reward: float, edit_answer: bool = False) -> int:
    rollouts = [{"example_id": i, "reward": reward, "answer": completion if edit_answer else word,
                 "prompt": [{"role": "user", "content": word}],
                 "completion": [{"role": "assistant", "content": completion or word}]}
                for i, word in enumerate(("alpha", "beta", "gamma"))]
    metadata = {"model": "scripted", "status": "complete", "avg_reward": reward, "num_examples": 3,
                "rollouts_per_example": 1}
    answer = httpx.post(f"{url}/api/v1/evals", headers=bearer(token), timeout=30,
                        json={"project": name, "version": "0.1.0", "metadata": metadata, "rollouts": rollouts})
    assert answer.status_code == 201, answer.text
    return int(answer.json()["id"])


def test_uploads_are_checked_in_sandboxes_and_results_re_scored(hub: tuple[str, str, Path], check_image: Path,
                                                                  tmp_path: Path, browser_page: Any) -> None:  # noqa: F811
    url, token, data_dir = hub
    for kind, name in (("good", "good-env"), ("raises", "raising-env"), ("nan", "nan-env")):
        assert _upload(url, token, env_wheel(tmp_path, kind, name), name).status_code == 200
    assert _check(url, "good-env")["status"] == "queued"
    # the owner of nan-env refuses failing versions
    assert httpx.patch(f"{url}/api/v1/projects/alice/nan-env", headers=bearer(token),
                       json={"refuse_failing_checks": True}).status_code == 200
    # a file that is not a wheel never reaches the queue: the upload itself is refused
    fake = tmp_path / "fake_env-0.1.0-py3-none-any.whl"
    fake.write_bytes(b"not a zip")
    assert _upload(url, token, fake, "fake-env").status_code == 400
    honest = _push(url, token, "good-env", "", 1.0)
    tampered = _push(url, token, "good-env", "a wrong reply", 1.0)  # the rubric gives these 0.0
    # a wrong reply with the answer edited to match it: the rubric gives 1.0, but it is not the dataset's row
    forged = _push(url, token, "good-env", "a wrong reply", 1.0, edit_answer=True)

    _run_worker(data_dir, check_image)

    good, raising, nan = (_check(url, n) for n in ("good-env", "raising-env", "nan-env"))
    assert good["status"] == "passed", good
    assert good["report"]["sdk_version"].startswith("0.3.0") and good["report"]["timings"]["install_s"] > 0
    assert raising["status"] == "failed" and "RuntimeError('the dataset is not there')" in raising["summary"]
    assert nan["status"] == "failed" and "not finite" in nan["summary"]
    nan_info = httpx.get(f"{url}/api/v1/projects/alice/nan-env").json()
    assert nan_info["refuse_failing_checks"] and nan_info["versions"][0]["yanked"]  # the policy yanked it
    assert not httpx.get(f"{url}/api/v1/projects/alice/raising-env").json()["versions"][0]["yanked"]

    board = {r["id"]: r for r in httpx.get(f"{url}/api/v1/projects/alice/good-env/evals").json()["results"]}
    assert board[honest]["rescore"] == "rescored", board[honest]
    assert board[tampered]["rescore"] == "mismatch"
    assert "pushed 1.0, re-scored 0.0" in board[tampered]["rescore_summary"]
    assert board[forged]["rescore"] == "mismatch"
    assert "not this version's dataset" in board[forged]["rescore_summary"], board[forged]
    assert [r["id"] for r in httpx.get(f"{url}/api/v1/projects/alice/good-env/evals").json()["results"]][0] == honest

    page = browser_page
    for name, status, text in (("raising-env", "failed", "RuntimeError('the dataset is not there')"),
                               ("nan-env", "failed", "rewards are not finite"),
                               ("good-env", "passed", "3 rollouts, rewards finite and in range")):
        page.goto(f"{url}/alice/{name}/versions/0.1.0")
        assert page.locator("#server-check-badge").inner_text() == f"Hub check: {status}"
        assert page.locator("#server-check-status").inner_text() == status
        assert text in page.locator("#server-check-summary").inner_text()
    page.goto(f"{url}/alice/good-env/evals/{honest}")
    assert page.locator("#rescore-badge").inner_text() == "re-scored"
    page.goto(f"{url}/alice/good-env/evals/{tampered}")
    assert page.locator("#rescore-badge").inner_text() == "re-score mismatch"
