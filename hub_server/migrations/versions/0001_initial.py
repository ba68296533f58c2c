"""Initial schema: owners, memberships, tokens, projects, releases, files.

Revision ID: 0001
Revises:
Create Date: 2026-11-20
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "owners",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(39), nullable=False, unique=True),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
    )
    op.create_table(
        "memberships",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("org_id", sa.Integer(), sa.ForeignKey("owners.id"), nullable=False, index=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("owners.id"), nullable=False, index=True),
        sa.Column("role", sa.String(8), nullable=False),
        sa.UniqueConstraint("org_id", "user_id"),
    )
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("public_id", sa.String(16), nullable=False, unique=True),
        sa.Column("secret_sha256", sa.String(64), nullable=False),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("owners.id"), nullable=False, index=True),
        sa.Column("permission", sa.String(8), nullable=False),
        sa.Column("scope_owner_id", sa.Integer(), sa.ForeignKey("owners.id"), nullable=True),
        sa.Column("scope_project", sa.String(100), nullable=True),
        sa.Column("description", sa.String(200), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("expires_at", _TS, nullable=True),
        sa.Column("revoked_at", _TS, nullable=True),
        sa.Column("last_used_at", _TS, nullable=True),
    )
    op.create_table(
        "projects",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("owner_id", sa.Integer(), sa.ForeignKey("owners.id"), nullable=False, index=True),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("normalized", sa.String(100), nullable=False, unique=True),
        sa.Column("private", sa.Boolean(), nullable=False),
        sa.Column("quarantined", sa.Boolean(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
    )
    op.create_table(
        "releases",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id"), nullable=False, index=True),
        sa.Column("version", sa.String(100), nullable=False),
        sa.Column("canonical_version", sa.String(100), nullable=False),
        sa.Column("yanked", sa.Boolean(), nullable=False),
        sa.Column("yanked_reason", sa.String(500), nullable=False),
        sa.Column("requires_python", sa.String(200), nullable=True),
        sa.Column("summary", sa.String(512), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("description_content_type", sa.String(200), nullable=False),
        sa.Column("keywords", sa.String(1000), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.UniqueConstraint("project_id", "canonical_version"),
    )
    op.create_table(
        "files",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("release_id", sa.Integer(), sa.ForeignKey("releases.id"), nullable=False, index=True),
        sa.Column("filename", sa.String(255), nullable=False, unique=True),
        sa.Column("packagetype", sa.String(16), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False, index=True),
        sa.Column("blake2_256", sa.String(64), nullable=False),
        sa.Column("requires_python", sa.String(200), nullable=True),
        sa.Column("metadata_sha256", sa.String(64), nullable=True),
        sa.Column("uploaded_by_id", sa.Integer(), sa.ForeignKey("owners.id"), nullable=False),
        sa.Column("uploaded_at", _TS, nullable=False),
        sa.Column("deleted_at", _TS, nullable=True),
    )


def downgrade() -> None:
    for table in ("files", "releases", "projects", "tokens", "memberships", "owners"):
        op.drop_table(table)
