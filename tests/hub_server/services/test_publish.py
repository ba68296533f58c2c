"""Publishing under concurrency (registry.md §6.18) and the durable-blob-before-row order."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from hub_server.context import Hub
from hub_server.db import File, Project
from hub_server.errors import StorageError
from hub_server.services.publish import StagedFile, publish
from hub_server.storage import blob_key
from hub_server.testing.dists import make_wheel, upload_form
from tests.hub_server.conftest import basic


def _post(url: str, token: str, path: Path, name: str, version: str) -> httpx.Response:
    with open(path, "rb") as handle:
        return httpx.post(f"{url}/legacy/", data=upload_form(path, name, version), headers=basic(token),
                          files={"content": (path.name, handle)}, timeout=60)


def test_parallel_uploads_of_one_new_filename_with_different_bytes(hub: Hub, live_url: str, tmp_path: Path,
                                                                   make_user: Callable[..., str]) -> None:
    token = make_user("alice")
    wheels = [make_wheel(tmp_path / str(i), "race-env", "0.1.0", body=f"VALUE = {i}\n") for i in range(10)]
    with ThreadPoolExecutor(10) as pool:
        responses = list(pool.map(lambda w: _post(live_url, token, w, "race-env", "0.1.0"), wheels))
    codes = [r.status_code for r in responses]
    assert codes.count(200) == 1 and codes.count(400) == 9, [r.text for r in responses]
    assert all("File already exists" in r.text for r in responses if r.status_code == 400)
    winner = wheels[codes.index(200)]
    with hub.db.read() as session:
        [row] = session.scalars(select(File)).all()
    assert row.sha256 == hashlib.sha256(winner.read_bytes()).hexdigest()
    served = httpx.get(f"{live_url}/files/{row.sha256}/{row.filename}").content
    assert served == winner.read_bytes()


def test_parallel_uploads_of_different_files_make_one_project(hub: Hub, live_url: str, tmp_path: Path,
                                                              make_user: Callable[..., str]) -> None:
    token = make_user("alice")
    wheels = [make_wheel(tmp_path, "many-env", f"1.{i}") for i in range(20)]
    with ThreadPoolExecutor(20) as pool:
        codes = list(pool.map(lambda w: _post(live_url, token, w, "many-env", w.name.split("-")[1]).status_code,
                              wheels))
    assert codes == [200] * 20
    with hub.db.read() as session:
        assert session.scalar(select(func.count(Project.id))) == 1
        assert session.scalar(select(func.count(File.id))) == 20


def test_no_row_when_the_blob_cannot_be_stored(hub: Hub, make_user: Callable[..., str], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    make_user("alice")
    from hub_server.auth.principal import authenticate
    from hub_server.services import accounts

    with hub.db.write() as session:
        token = accounts.issue_token(session, accounts.get_owner(session, "alice"), "publish", expires_in=None)
    with hub.db.read() as session:
        principal = authenticate(session, token)
    wheel = make_wheel(tmp_path, "demo-env", "0.1.0")
    staged_path = hub.storage.staging_dir() / "upload-x"
    staged_path.write_bytes(wheel.read_bytes())
    data = wheel.read_bytes()
    staged = StagedFile(staged_path, wheel.name, len(data), hashlib.sha256(data).hexdigest(),
                        hashlib.blake2b(data, digest_size=32).hexdigest(), hashlib.md5(data).hexdigest())

    def disk_full(key: str, source: Path) -> None:
        raise StorageError("disk full")

    monkeypatch.setattr(hub.storage, "put", disk_full)  # the one fault a real disk will not produce on demand
    with pytest.raises(StorageError):
        publish(hub.db, hub.storage, principal, upload_form(wheel, "demo-env", "0.1.0"), staged)
    with hub.db.read() as session:
        assert session.scalar(select(func.count(File.id))) == 0
    assert not staged_path.exists() and not hub.storage.exists(blob_key(staged.sha256))
