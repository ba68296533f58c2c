"""Rate-limit events in the database, so every app worker counts against one budget.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rate_events",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("scope", sa.String(40), nullable=False),
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
    )
    op.create_index("ix_rate_events_scope_key_at", "rate_events", ["scope", "key", "at"])
    op.create_index("ix_rate_events_scope_at", "rate_events", ["scope", "at"])


def downgrade() -> None:
    op.drop_table("rate_events")
