"""One release per PEP 440 version, and a contract check for every wheel.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-07

Before this revision a release was keyed by ``str(Version)``, so ``0.1`` and ``0.1.0`` (one version to PEP 440
and to pip) could be two releases, and only a release's first wheel was checked. Releases are re-keyed by their
normal form without trailing ``.0`` parts (``hub_server.names.release_key``). Where two releases of a project
now share a key, the oldest keeps it and each later one is yanked and keyed ``KEY#dup-ID``, so nothing is
deleted and pip prefers the kept release's files. Every live wheel of a release that has contract checks but
none of its own is queued for one, and ``server_checks.file_id`` is indexed (checks are looked up by wheel).
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from alembic import op
from packaging.utils import canonicalize_version
from packaging.version import InvalidVersion, Version

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

DUPLICATE_REASON = "another spelling of an existing version (PEP 440 reads them as one); yanked by the Hub"

_releases = sa.table("releases", sa.column("id", sa.Integer), sa.column("project_id", sa.Integer),
                     sa.column("version", sa.String), sa.column("canonical_version", sa.String),
                     sa.column("yanked", sa.Boolean), sa.column("yanked_reason", sa.String))
_files = sa.table("files", sa.column("id", sa.Integer), sa.column("release_id", sa.Integer),
                  sa.column("packagetype", sa.String), sa.column("deleted_at", sa.DateTime))
_checks = sa.table("server_checks", sa.column("id", sa.Integer), sa.column("kind", sa.String),
                   sa.column("release_id", sa.Integer), sa.column("file_id", sa.Integer),
                   sa.column("status", sa.String), sa.column("summary", sa.String),
                   sa.column("attempts", sa.Integer), sa.column("queued_at", sa.DateTime(timezone=True)))


def _key(version: str) -> str:
    """This revision's release key (``hub_server.names.release_key`` is the live twin)."""
    try:
        return canonicalize_version(Version(version), strip_trailing_zero=True)
    except InvalidVersion:  # never stored by the index, but a migration must not fail on one row
        return version


def upgrade() -> None:
    bind = op.get_bind()
    op.create_index("ix_server_checks_file_id", "server_checks", ["file_id"])
    rows = bind.execute(sa.select(_releases.c.id, _releases.c.project_id, _releases.c.version)
                        .order_by(_releases.c.id)).all()
    # first out of the way: a re-keyed row must not collide with a row not yet re-keyed (the unique constraint)
    for release_id, _project, _version in rows:
        bind.execute(sa.update(_releases).where(_releases.c.id == release_id)
                     .values(canonical_version=f"#migrating-{release_id}"))
    taken: set[tuple[int, str]] = set()
    for release_id, project_id, version in rows:
        key = _key(version)
        values: dict[str, object] = {"canonical_version": key}
        if (project_id, key) in taken:
            values = {"canonical_version": f"{key}#dup-{release_id}", "yanked": True,
                      "yanked_reason": DUPLICATE_REASON}
        taken.add((project_id, key))
        bind.execute(sa.update(_releases).where(_releases.c.id == release_id).values(**values))
    checked = sa.select(_checks.c.release_id).where(_checks.c.kind == "contract")
    unchecked = bind.execute(
        sa.select(_files.c.id, _files.c.release_id)
        .where(_files.c.packagetype == "bdist_wheel", _files.c.deleted_at.is_(None),
               _files.c.release_id.in_(checked),
               ~sa.exists().where(_checks.c.file_id == _files.c.id, _checks.c.kind == "contract"))).all()
    now = dt.datetime.now(dt.timezone.utc)
    for file_id, release_id in unchecked:
        bind.execute(sa.insert(_checks).values(kind="contract", release_id=release_id, file_id=file_id,
                                               status="queued", summary="", attempts=0, queued_at=now))


def downgrade() -> None:
    # Keys go back to str(Version); duplicates keep their yank (un-yanking them is the owner's call).
    bind = op.get_bind()
    for release_id, version, key in bind.execute(sa.select(_releases.c.id, _releases.c.version,
                                                           _releases.c.canonical_version)).all():
        if "#dup-" not in key:
            bind.execute(sa.update(_releases).where(_releases.c.id == release_id)
                         .values(canonical_version=str(Version(version))))
    op.drop_index("ix_server_checks_file_id", table_name="server_checks")
