"""The read cache: reused while fresh, dropped by this process's writes, stale for at most its TTL elsewhere."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from hub_server import Settings, create_app
from hub_server.api.read_cache import ReadCache
from hub_server.context import Hub
from hub_server.db import Database, Owner
from hub_server.services.catalog import set_quarantined
from hub_server.testing.dists import make_wheel
from tests.hub_server.conftest import bearer

Upload = Callable[..., httpx.Response]


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(f"sqlite:///{tmp_path}/hub.sqlite3")
    database.migrate()
    return database


def _counting(value: object) -> tuple[list[int], Callable[[], object]]:
    calls: list[int] = []

    def compute() -> object:
        calls.append(1)
        return value

    return calls, compute


def test_answers_are_reused_until_this_process_writes(db: Database) -> None:
    cache = ReadCache(db, ttl=60)
    calls, compute = _counting("page")
    assert cache.get("k", compute) == cache.get("k", compute) == "page"
    assert len(calls) == 1
    with db.write() as session:
        session.add(Owner(name="someone", kind="user"))
    assert cache.get("k", compute) == "page" and len(calls) == 2
    db.dispose()


def test_writes_that_change_no_read_keep_the_cache(db: Database) -> None:
    cache = ReadCache(db, ttl=60)
    calls, compute = _counting("page")
    cache.get("k", compute)
    with db.write(changes_reads=False) as session:  # e.g. a download tally
        session.add(Owner(name="someone", kind="user"))
    cache.get("k", compute)
    assert len(calls) == 1
    db.dispose()


def test_answers_expire_and_none_is_an_answer(db: Database) -> None:
    cache = ReadCache(db, ttl=0.2)
    calls, compute = _counting(None)
    assert cache.get("missing", compute) is None and cache.get("missing", compute) is None
    assert len(calls) == 1
    time.sleep(0.25)
    cache.get("missing", compute)
    assert len(calls) == 2
    db.dispose()


def test_a_zero_ttl_turns_it_off(db: Database) -> None:
    cache = ReadCache(db, ttl=0)
    calls, compute = _counting(1)
    cache.get("k", compute)
    cache.get("k", compute)
    assert len(calls) == 2
    db.dispose()


def test_another_workers_change_shows_within_the_ttl(tmp_path: Path, make_user: Callable[..., str],
                                                      upload: Upload, hub: Hub) -> None:
    token = make_user("alice")
    assert upload(token, make_wheel(tmp_path, "demo-env", "0.1.0"), "demo-env", "0.1.0").status_code == 200
    # A second app on the same database and blobs: another worker, with its own cache.
    other = create_app(hub.settings.model_copy(update={"read_cache_seconds": 0.5}))
    with TestClient(other) as client:
        assert client.get("/simple/demo-env/").status_code == 200
        with hub.db.write() as session:  # the first worker quarantines the project
            set_quarantined(session, "demo-env", True)
        assert client.get("/simple/demo-env/").status_code == 200  # not yet seen here
        time.sleep(0.6)
        assert client.get("/simple/demo-env/").status_code == 404
    other.state.hub.db.dispose()


def test_authenticated_reads_bypass_it(client: TestClient, make_user: Callable[..., str], upload: Upload,
                                       tmp_path: Path) -> None:
    token = make_user("alice")
    created = client.post("/api/v1/projects", json={"owner": "alice", "name": "secret-env", "private": True},
                          headers=bearer(token))
    assert created.status_code == 201
    assert client.get("/simple/secret-env/").status_code == 404  # anonymous: cached as not found
    assert upload(token, make_wheel(tmp_path, "secret-env", "0.1.0"), "secret-env", "0.1.0").status_code == 200
    page = client.get("/simple/secret-env/", headers=bearer(token))
    assert page.status_code == 200 and "secret_env-0.1.0" in page.text
    assert page.headers["cache-control"] == "private, no-store"
    assert client.get("/simple/secret-env/").status_code == 404  # and never served to anonymous callers


def test_the_setting_refuses_negative_values(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        Settings(data_dir=tmp_path, read_cache_seconds=-1)
