"""Download counts per file and day; evaluation results pushed by ``vf-eval --push``.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "download_counts",
        sa.Column("file_id", sa.Integer(), sa.ForeignKey("files.id"), primary_key=True),
        sa.Column("day", sa.Date(), primary_key=True),
        sa.Column("count", sa.Integer(), nullable=False),
    )
    op.create_table(
        "eval_results",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("release_id", sa.Integer(), sa.ForeignKey("releases.id"), nullable=False, index=True),
        sa.Column("submitted_by_id", sa.Integer(), sa.ForeignKey("owners.id"), nullable=False),
        sa.Column("by_publisher", sa.Boolean(), nullable=False),
        sa.Column("artifact_verified", sa.Boolean(), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("avg_reward", sa.Float(), nullable=False),
        sa.Column("std_reward", sa.Float(), nullable=False),
        sa.Column("num_examples", sa.Integer(), nullable=False),
        sa.Column("rollouts_per_example", sa.Integer(), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("pass_at_k", sa.JSON(), nullable=False),
        sa.Column("run_metadata", sa.JSON(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("run_date", _TS, nullable=True),
        sa.Column("created_at", _TS, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("eval_results")
    op.drop_table("download_counts")
