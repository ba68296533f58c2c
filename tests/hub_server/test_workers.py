"""Several app processes on one database and one storage (registry.md §6.18 across processes).

Two ``vf-hub serve`` processes share whatever this run is configured with: a data folder (SQLite
and blobs) by default, PostgreSQL + S3 on the scale path (``scale.py``). Requests alternate
between them, so every race below is a race between processes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from hub_server import Settings
from hub_server.db import Database
from hub_server.services import accounts
from hub_server.testing.dists import make_wheel, upload_form
from tests.hub_server.conftest import basic

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve(data_dir: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    vf_hub = Path(sys.executable).parent / "vf-hub"
    process = subprocess.Popen([str(vf_hub), "serve", "--host", "127.0.0.1", "--port", str(port),
                                "--data-dir", str(data_dir)], stdout=log.open("wb"), stderr=subprocess.STDOUT,
                               env=os.environ.copy())
    return process, f"http://127.0.0.1:{port}"


def _wait_healthy(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} did not start:\n{log.read_text()}")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[str], str]]:
    """Two Hub processes on one database and storage; yields their URLs and a publish token."""
    tmp_path = tmp_path_factory.mktemp("workers")
    data_dir = tmp_path / "hub"
    db = Database(Settings(data_dir=data_dir).resolved_database_url())
    db.migrate()
    with db.write() as session:
        _, token = accounts.create_user(session, "alice", dt.timedelta(days=1))
    db.dispose()
    started = [_serve(data_dir, tmp_path / f"server{i}.log") for i in range(2)]
    try:
        for i, (process, url) in enumerate(started):
            _wait_healthy(process, url, tmp_path / f"server{i}.log")
        yield [url for _, url in started], token
    finally:
        for process, _ in started:
            process.terminate()
        for process, _ in started:
            process.wait(timeout=30)


def _post(url: str, token: str, wheel: Path, name: str, version: str) -> httpx.Response:
    with open(wheel, "rb") as handle:
        return httpx.post(f"{url}/legacy/", data=upload_form(wheel, name, version), headers=basic(token),
                          files={"content": (wheel.name, handle)}, timeout=120)


def test_parallel_uploads_of_different_files_through_two_processes(servers: tuple[list[str], str],
                                                                    tmp_path: Path) -> None:
    urls, token = servers
    wheels = [make_wheel(tmp_path / "w", "split-env", f"0.{i}.0") for i in range(16)]
    with ThreadPoolExecutor(16) as pool:
        responses = list(pool.map(lambda i: _post(urls[i % 2], token, wheels[i], "split-env", f"0.{i}.0"),
                                  range(len(wheels))))
    assert [r.status_code for r in responses] == [200] * 16, [r.text for r in responses]
    for url in urls:
        page = httpx.get(f"{url}/simple/split-env/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        assert sorted(f["filename"] for f in page.json()["files"]) == sorted(w.name for w in wheels)


def test_racing_uploads_of_one_filename_through_two_processes(servers: tuple[list[str], str],
                                                              tmp_path: Path) -> None:
    urls, token = servers
    wheels = [make_wheel(tmp_path / str(i), "race-env", "1.0", body=f"VALUE = {i}\n") for i in range(10)]
    with ThreadPoolExecutor(10) as pool:
        responses = list(pool.map(lambda i: _post(urls[i % 2], token, wheels[i], "race-env", "1.0"), range(10)))
    codes = [r.status_code for r in responses]
    assert codes.count(200) == 1 and codes.count(400) == 9, [r.text for r in responses]
    assert all("File already exists" in r.text for r in responses if r.status_code == 400)
    winner = wheels[codes.index(200)].read_bytes()
    sha = hashlib.sha256(winner).hexdigest()
    for url in urls:  # both processes serve the winner's bytes, and nothing else is listed
        page = httpx.get(f"{url}/simple/race-env/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        assert [f["hashes"]["sha256"] for f in page.json()["files"]] == [sha]
        assert httpx.get(f"{url}/files/{sha}/{wheels[0].name}", follow_redirects=True).content == winner


def test_failed_authentications_count_against_one_budget_across_processes(servers: tuple[list[str], str]) -> None:
    urls, _ = servers
    limit = Settings().failed_auth_per_minute  # both processes run with the defaults
    codes = [httpx.get(f"{urls[i % 2]}/api/v1/whoami", headers=basic(f"vfh_wrong{i}"), timeout=30).status_code
             for i in range(limit)]
    assert codes == [403] * limit
    for url in urls:  # the next one is refused by either process, not only after `limit` more per process
        refused = httpx.get(f"{url}/api/v1/whoami", headers=basic("vfh_wrong"), timeout=30)
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
