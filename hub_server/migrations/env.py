"""Alembic environment: runs on the connection :meth:`hub_server.db.Database.migrate` hands over."""

from __future__ import annotations

from alembic import context

from hub_server.db.models import Base

# An arbitrary constant: the advisory lock that serialises migrations of several workers on PostgreSQL.
_PG_MIGRATION_LOCK = 7_305_511

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through hub_server.db.Database.migrate(), which provides a connection")

context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True, compare_type=True)
with context.begin_transaction():
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_MIGRATION_LOCK})")
    context.run_migrations()
