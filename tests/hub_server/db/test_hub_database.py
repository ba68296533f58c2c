"""The database: migrations match the models, run repeatedly and concurrently; writers queue, never fail."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import func, inspect, select

from hub_server.db import Base, Database, Owner


def test_migrations_create_exactly_the_models_schema(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path}/hub.sqlite3")
    db.migrate()
    db.migrate()  # idempotent: a restart migrates nothing
    with db.write_engine.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection, opts={"compare_type": True}), Base.metadata)
        assert diff == []
        assert {"owners", "projects", "releases", "files", "tokens", "memberships"} <= set(
            inspect(connection).get_table_names())
    db.dispose()


def _migrate(url: str) -> str:
    db = Database(url)
    try:
        db.migrate()
    finally:
        db.dispose()
    return "ok"


@pytest.mark.slow
def test_workers_migrating_at_once_all_succeed(tmp_path: Path) -> None:
    # Worker processes, as `vf-hub serve --workers N` starts them (Alembic's context is per process).
    url = f"sqlite:///{tmp_path}/hub.sqlite3"
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        assert pool.map(_migrate, [url] * 3, chunksize=1) == ["ok"] * 3


def test_concurrent_write_transactions_queue_instead_of_failing(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path}/hub.sqlite3")
    db.migrate()
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            with db.write() as session:
                session.scalar(select(func.count(Owner.id)))  # read first, then write: the upgrade case
                session.add(Owner(name=f"user{i}", kind="user"))
        except BaseException as error:  # collected for the assertion below
            errors.append(error)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with db.read() as session:
        assert session.scalar(select(func.count(Owner.id))) == 16
    db.dispose()


def test_a_failed_write_block_leaves_nothing(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path}/hub.sqlite3")
    db.migrate()
    try:
        with db.write() as session:
            session.add(Owner(name="ghost", kind="user"))
            session.flush()
            raise RuntimeError("crash inside the transaction")
    except RuntimeError:
        pass
    with db.read() as session:
        assert session.scalar(select(Owner).where(Owner.name == "ghost")) is None
    db.dispose()
