"""Engines, sessions and migrations for one database URL.

Reads and writes use separate engines on SQLite: a write transaction starts with
``BEGIN IMMEDIATE`` so concurrent writers queue on the database lock (with a busy timeout)
instead of failing when a read lock cannot be upgraded; reads start a plain ``BEGIN`` and, in
WAL mode, never wait for writers. Other databases use one engine and rely on constraints.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config as AlembicConfig
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"
_SQLITE_BUSY_TIMEOUT_S = 60


def _sqlite_engine(url: str, begin: str) -> Engine:
    engine = create_engine(url, connect_args={"timeout": _SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we emit BEGIN ourselves (pysqlite's own handling breaks locking)
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")  # a committed row survives power loss, like its blob
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql(begin)

    return engine


class Database:
    """The Hub's database: ``read()`` and ``write()`` sessions, and ``migrate()`` to the newest schema."""

    def __init__(self, url: str) -> None:
        self.url = url
        parsed = make_url(url)
        self.is_sqlite = parsed.get_backend_name() == "sqlite"
        if self.is_sqlite:
            if parsed.database and parsed.database != ":memory:":
                Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
            self.read_engine = _sqlite_engine(url, "BEGIN")
            self.write_engine = _sqlite_engine(url, "BEGIN IMMEDIATE")
        else:
            self.read_engine = self.write_engine = create_engine(url, pool_pre_ping=True)
        self._read = sessionmaker(self.read_engine, expire_on_commit=False)
        self._write = sessionmaker(self.write_engine, expire_on_commit=False)

    def migrate(self) -> None:
        """Bring the schema to the newest Alembic revision (safe to call from several workers at once)."""
        config = AlembicConfig()
        config.set_main_option("script_location", str(MIGRATIONS))
        with self.write_engine.connect() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A session for reads; its transaction is rolled back at the end."""
        with self._read() as session:
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A session whose transaction commits when the block ends without error."""
        with self._write() as session, session.begin():
            yield session

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.read_engine.dispose()
        if self.write_engine is not self.read_engine:
            self.write_engine.dispose()
