"""Blobs found damaged (bytes that do not match their content address) or missing, so nothing serves them.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02

Empty at upgrade: ``vf-hub admin verify`` fills it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "damaged_blobs",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("problem", sa.String(20), nullable=False),
        sa.Column("found_sha256", sa.String(64), nullable=True),
        sa.Column("detected_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("damaged_blobs")
