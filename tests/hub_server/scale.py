"""The scale path under test: PostgreSQL and S3 instead of SQLite and a folder, chosen by environment.

With ``VF_HUB_TEST_DATABASE_URL`` (a PostgreSQL database the tests may create schemas in) and/or
``VF_HUB_TEST_STORAGE_URL`` (``s3://BUCKET?endpoint_url=...``; the bucket is created if missing)
set, e.g. by ``eval "$(bash scripts/start_scale_services.sh)"``, every Hub a test builds reads
``VF_HUB_DATABASE_URL``/``VF_HUB_STORAGE_URL`` pointing at a schema and a key prefix of its own,
so tests stay independent. Unset, nothing changes: SQLite and a folder under the test's data_dir.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from hub_server.db.database import server_url
from hub_server.storage import LocalStorage, Storage

DATABASE_ENV = "VF_HUB_TEST_DATABASE_URL"
STORAGE_ENV = "VF_HUB_TEST_STORAGE_URL"
_PREFIX = "hubtest_"


class ScaleBackends:
    """Hands out a fresh PostgreSQL schema and S3 prefix per call, from the two base URLs.

    The schemas live in a database made for this test session (dropped by :meth:`close`, or at the
    next session's start if this one was killed), so nothing piles up in the base database.
    """

    def __init__(self, database_url: str | None, storage_url: str | None) -> None:
        self.base_database_url = server_url(database_url) if database_url else None
        self.storage_url = storage_url
        self.database_url: str | None = None
        if self.base_database_url is not None:
            self.database_url = self._create_session_database()
        if self.storage_url is not None:
            self._ensure_bucket()

    @classmethod
    def from_env(cls) -> ScaleBackends:
        return cls(os.environ.get(DATABASE_ENV) or None, os.environ.get(STORAGE_ENV) or None)

    def _admin(self, url: str) -> Engine:
        return create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")

    def _create_session_database(self) -> str:
        assert self.base_database_url is not None
        name = f"{_PREFIX}{uuid.uuid4().hex[:16]}"
        engine = self._admin(self.base_database_url)
        with engine.connect() as connection:
            stale = connection.scalars(text("SELECT datname FROM pg_database WHERE datname LIKE :p"),
                                       {"p": f"{_PREFIX}%"}).all()
            for old in stale:  # left by a killed session
                connection.exec_driver_sql(f'DROP DATABASE "{old}" WITH (FORCE)')
            connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
        engine.dispose()
        return make_url(self.base_database_url).set(database=name).render_as_string(hide_password=False)

    def close(self) -> None:
        """Drop this session's database (closing whatever connections the tests left open)."""
        if self.base_database_url is None or self.database_url is None:
            return
        engine = self._admin(self.base_database_url)
        with engine.connect() as connection:
            connection.exec_driver_sql(f'DROP DATABASE "{make_url(self.database_url).database}" WITH (FORCE)')
        engine.dispose()
        self.database_url = None

    def _ensure_bucket(self) -> None:
        assert self.storage_url is not None
        ensure_bucket(self.storage_url)

    def fresh_database(self) -> str | None:
        """A URL whose connections use a new, empty schema (None on the default path)."""
        if self.database_url is None:
            return None
        schema = f"{_PREFIX}{uuid.uuid4().hex[:16]}"
        engine = self._admin(self.database_url)
        with engine.connect() as connection:
            connection.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
        engine.dispose()
        url = make_url(self.database_url).update_query_dict({"options": f"-csearch_path={schema}"})
        return url.render_as_string(hide_password=False)

    def fresh_storage(self) -> str | None:
        """The S3 URL with a new key prefix (None on the default path)."""
        return with_fresh_prefix(self.storage_url) if self.storage_url is not None else None

    def environment(self) -> dict[str, str]:
        """``VF_HUB_*`` variables for one fresh Hub (empty on the default path)."""
        env = {"VF_HUB_DATABASE_URL": self.fresh_database(), "VF_HUB_STORAGE_URL": self.fresh_storage()}
        return {key: value for key, value in env.items() if value is not None}


def overwrite_blob(storage: Storage, key: str, data: bytes) -> None:
    """Replace a stored blob's bytes behind the Hub's back (a corruption ``put`` would never allow)."""
    if isinstance(storage, LocalStorage):
        path = storage.locate(key)
        assert isinstance(path, Path)
        path.write_bytes(data)
        return
    from hub_server.storage.s3 import S3Storage

    assert isinstance(storage, S3Storage)
    storage.client.put_object(Bucket=storage.bucket, Key=storage.prefix + key, Body=data)


def with_fresh_prefix(s3_url: str) -> str:
    """``s3_url`` with a new, unique key prefix appended to its path."""
    parts = urlsplit(s3_url)
    prefix = f"{parts.path.strip('/')}/{_PREFIX}{uuid.uuid4().hex[:16]}".strip("/")
    return urlunsplit((parts.scheme, parts.netloc, f"/{prefix}", parts.query, ""))


def ensure_bucket(s3_url: str) -> None:
    """Create the URL's bucket unless it exists (deployments create theirs; test servers start empty)."""
    from hub_server.storage.s3 import S3Storage, default_staging

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")  # moto takes any credentials; boto3 needs some
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    storage = S3Storage.from_url(s3_url, default_staging())
    existing = {b["Name"] for b in storage.client.list_buckets().get("Buckets", [])}
    if storage.bucket not in existing:
        storage.client.create_bucket(Bucket=storage.bucket)


@contextmanager
def local_s3(bucket: str = "vf-hub-test") -> Iterator[str]:
    """moto's S3 server on 127.0.0.1 in a thread of this process; yields an ``s3://`` URL of ``bucket``."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"s3://{bucket}?endpoint_url=http://{host}:{port}"
    try:
        ensure_bucket(url)
        yield url
    finally:
        server.stop()
