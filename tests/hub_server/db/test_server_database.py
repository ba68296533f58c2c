"""The server-database path (PostgreSQL): URL binding, pooling, and, with a PostgreSQL configured for
the scale path (``scale.py``), migrations from several processes and racing writers on it."""

from __future__ import annotations

import multiprocessing
import os
import threading

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.pool import QueuePool

from hub_server.db import Database, Owner
from hub_server.db.database import server_url
from tests.hub_server.scale import DATABASE_ENV, ScaleBackends


@pytest.mark.parametrize(("given", "used"), [
    ("postgresql://u@h/db", "postgresql+psycopg://u@h/db"),
    ("postgres://u@h/db", "postgresql+psycopg://u@h/db"),
    ("postgresql+psycopg://u@h/db", "postgresql+psycopg://u@h/db"),
    ("sqlite:///x.db", "sqlite:///x.db"),
])
def test_bare_postgresql_urls_use_the_shipped_driver(given: str, used: str) -> None:
    assert server_url(given) == used


def test_a_server_database_gets_one_pooled_engine_without_connecting() -> None:
    db = Database("postgresql://nobody@127.0.0.1:1/none")  # nothing listens there: engines connect lazily
    assert db.read_engine is db.write_engine and not db.is_sqlite
    assert db.read_engine.dialect.driver == "psycopg"
    pool = db.read_engine.pool
    assert isinstance(pool, QueuePool) and pool.size() == 20
    db.dispose()


@pytest.fixture
def pg_url(scale_backends: ScaleBackends) -> str:
    url = scale_backends.fresh_database()
    if url is None:
        pytest.skip(f"n/a outside the scale pass: set {DATABASE_ENV} (scripts/start_scale_services.sh)")
    return url


def _migrate(url: str) -> str:
    db = Database(url)
    try:
        db.migrate()
    finally:
        db.dispose()
    return "ok"


@pytest.mark.slow
def test_workers_migrating_one_postgresql_at_once_all_succeed(pg_url: str) -> None:
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        assert pool.map(_migrate, [pg_url] * 3, chunksize=1) == ["ok"] * 3


def test_racing_inserts_of_one_unique_name_leave_one_row(pg_url: str) -> None:
    db = Database(pg_url)
    db.migrate()
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def insert() -> None:
        barrier.wait()
        try:
            with db.write() as session:
                session.add(Owner(name="same", kind="user"))
            outcomes.append("ok")
        except IntegrityError:
            outcomes.append("conflict")

    threads = [threading.Thread(target=insert) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["conflict"] * 7 + ["ok"]
    with db.read() as session:
        assert session.scalar(select(func.count(Owner.id))) == 1
    db.dispose()


def test_the_scale_path_is_what_the_hub_tests_use(pg_url: str) -> None:
    # The per-test environment points every Hub built in a test at PostgreSQL.
    assert os.environ["VF_HUB_DATABASE_URL"].startswith("postgresql+psycopg://")
