"""The Hub's tables (SQLAlchemy 2 declarative); the schema itself is owned by the Alembic migrations.

Rows are never removed where a removal could let history change: a deleted file keeps its row
(``deleted_at``) so its filename can never be reused, and a revoked token keeps its row.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> dt.datetime:
    """The current time, timezone-aware UTC."""
    return dt.datetime.now(dt.timezone.utc)


class UTCDateTime(TypeDecorator[dt.datetime]):
    """Aware UTC datetimes on every backend (SQLite would otherwise hand back naive ones)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Any) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(dt.timezone.utc)

    def process_result_value(self, value: dt.datetime | None, dialect: Any) -> dt.datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value.astimezone(dt.timezone.utc)


class Base(DeclarativeBase):
    """Declarative base of every table."""


class Owner(Base):
    """A user or an organisation: the ``owner`` in ``owner/name``."""

    __tablename__ = "owners"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(39), unique=True)
    kind: Mapped[str] = mapped_column(String(8))  # "user" | "org"
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class Membership(Base):
    """A user's role in an organisation; "admin" may manage members, every member may publish."""

    __tablename__ = "memberships"
    __table_args__ = (UniqueConstraint("org_id", "user_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    org_id: Mapped[int] = mapped_column(ForeignKey("owners.id"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("owners.id"), index=True)
    role: Mapped[str] = mapped_column(String(8))  # "admin" | "member"


class Token(Base):
    """An API token; only the SHA-256 of its secret is stored."""

    __tablename__ = "tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    public_id: Mapped[str] = mapped_column(String(16), unique=True)
    secret_sha256: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[int] = mapped_column(ForeignKey("owners.id"), index=True)
    permission: Mapped[str] = mapped_column(String(8))  # "read" | "publish"
    scope_owner_id: Mapped[int | None] = mapped_column(ForeignKey("owners.id"), nullable=True)
    scope_project: Mapped[str | None] = mapped_column(String(100), nullable=True)  # normalised name
    description: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)

    user: Mapped[Owner] = relationship(foreign_keys=[user_id])


class Project(Base):
    """An environment package; ``normalized`` is unique across the Hub."""

    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    normalized: Mapped[str] = mapped_column(String(100), unique=True)
    private: Mapped[bool] = mapped_column(Boolean, default=False)
    quarantined: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The shown version's tags as ",a,b," (hub_server.services.card_tags keeps it current).
    card_tags: Mapped[str] = mapped_column(String(1600), default="", server_default="")
    # The owner's policy: a version failing the Hub's own check (hub_server.worker) is yanked.
    refuse_failing_checks: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    owner: Mapped[Owner] = relationship()
    releases: Mapped[list[Release]] = relationship(back_populates="project")


class Release(Base):
    """One version of a project, with the metadata of its first uploaded file."""

    __tablename__ = "releases"
    __table_args__ = (UniqueConstraint("project_id", "canonical_version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"), index=True)
    version: Mapped[str] = mapped_column(String(100))
    canonical_version: Mapped[str] = mapped_column(String(100))
    yanked: Mapped[bool] = mapped_column(Boolean, default=False)
    yanked_reason: Mapped[str] = mapped_column(String(500), default="")
    requires_python: Mapped[str | None] = mapped_column(String(200), nullable=True)
    summary: Mapped[str] = mapped_column(String(512), default="")
    description: Mapped[str] = mapped_column(Text, default="")
    description_content_type: Mapped[str] = mapped_column(String(200), default="")
    keywords: Mapped[str] = mapped_column(String(1000), default="")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The README rendered once, at upload (services/release_readme.py): safe HTML, the argument and
    # metric tables as JSON, and the renderer's version; NULL for releases uploaded before migration
    # 0005 until their first page view. Deferred: loading a project's releases never reads them.
    readme_html: Mapped[str | None] = mapped_column(Text, nullable=True, deferred=True)
    readme_tables: Mapped[str | None] = mapped_column(Text, nullable=True, deferred=True)
    readme_renderer: Mapped[int | None] = mapped_column(Integer, nullable=True, deferred=True)

    project: Mapped[Project] = relationship(back_populates="releases")
    files: Mapped[list[File]] = relationship(back_populates="release")


class File(Base):
    """An uploaded distribution file; ``filename`` is unique forever, even after deletion."""

    __tablename__ = "files"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    release_id: Mapped[int] = mapped_column(ForeignKey("releases.id"), index=True)
    filename: Mapped[str] = mapped_column(String(255), unique=True)
    packagetype: Mapped[str] = mapped_column(String(16))  # "bdist_wheel" | "sdist"
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    blake2_256: Mapped[str] = mapped_column(String(64))
    requires_python: Mapped[str | None] = mapped_column(String(200), nullable=True)
    metadata_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    uploaded_by_id: Mapped[int] = mapped_column(ForeignKey("owners.id"))
    uploaded_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    deleted_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)

    release: Mapped[Release] = relationship(back_populates="files")
