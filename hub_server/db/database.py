"""Engines, sessions and migrations for one database URL.

Reads and writes use separate engines on SQLite: a write transaction starts with
``BEGIN IMMEDIATE`` so concurrent writers queue on the database lock (with a busy timeout)
instead of failing when a read lock cannot be upgraded; reads start a plain ``BEGIN`` and, in
WAL mode, never wait for writers. Other databases (PostgreSQL: the scale path) use one pooled
engine and rely on constraints: a unique-key conflict between workers rolls back one transaction,
which the caller retries (see ``services/publish.py``).
"""

from __future__ import annotations

import itertools
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
# Per app worker. The ASGI thread pool runs up to 40 requests at once, each holding a connection for
# one short transaction. Connections past pool_size are closed when returned and reopened on demand,
# which is cheap for SQLite (kept: 40) but costs a PostgreSQL backend start, so PostgreSQL keeps 20
# (+10 on demand): 3 workers fit its default max_connections of 100 (more: raise it, or use PgBouncer).
_SQLITE_POOL_SIZE = 40
_PG_POOL_SIZE = 20
_MAX_OVERFLOW = 10
_POOL_RECYCLE_S = 1800  # reconnect before idle-connection reapers (PgBouncer, cloud proxies) cut us off


def server_url(url: str) -> str:
    """``url`` with a bare ``postgresql://`` (or ``postgres://``) bound to the psycopg 3 driver the Hub ships."""
    for bare in ("postgresql://", "postgres://"):
        if url.startswith(bare):
            return "postgresql+psycopg://" + url.removeprefix(bare)
    return url


def _server_engine(url: str) -> Engine:
    return create_engine(server_url(url), pool_size=_PG_POOL_SIZE, max_overflow=_MAX_OVERFLOW,
                         pool_pre_ping=True, pool_recycle=_POOL_RECYCLE_S)


def _sqlite_engine(url: str, begin: str) -> Engine:
    engine = create_engine(url, connect_args={"timeout": _SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False},
                           pool_size=_SQLITE_POOL_SIZE, max_overflow=_MAX_OVERFLOW)

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
            self.read_engine = self.write_engine = _server_engine(url)
        self._read = sessionmaker(self.read_engine, expire_on_commit=False)
        self._write = sessionmaker(self.write_engine, expire_on_commit=False)
        self._commits = itertools.count(1)
        self.generation = 0

    def migrate(self, revision: str = "head") -> None:
        """Bring the schema to ``revision``, the newest by default (safe from several workers at once)."""
        config = AlembicConfig()
        config.set_main_option("script_location", str(MIGRATIONS))
        with self.write_engine.connect() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, revision)

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A session for reads; its transaction is rolled back at the end."""
        with self._read() as session:
            yield session

    @contextmanager
    def write(self, *, changes_reads: bool = True) -> Iterator[Session]:
        """A session whose transaction commits when the block ends without error.

        After the commit ``generation`` changes, which drops this process's cached reads (simple
        pages, file lookups); a write that cannot change them (download tallies) passes
        ``changes_reads=False`` and keeps them.
        """
        with self._write() as session, session.begin():
            yield session
        if changes_reads:
            self.generation = next(self._commits)

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.read_engine.dispose()
        if self.write_engine is not self.read_engine:
            self.write_engine.dispose()
