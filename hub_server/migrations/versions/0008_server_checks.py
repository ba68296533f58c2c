"""Checks the Hub runs itself: the contract check of each version and the re-scoring of pushed results.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04

``server_checks`` is both the queue the worker (``vf-hub worker check``) polls and the record of each
check's outcome. Versions and results from before it have no row (their pages say "not checked").
``projects.refuse_failing_checks`` is the owner's policy: a version failing its check is yanked.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "server_checks",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("kind", sa.String(12), nullable=False),
        sa.Column("release_id", sa.Integer, sa.ForeignKey("releases.id"), nullable=False),
        sa.Column("file_id", sa.Integer, sa.ForeignKey("files.id"), nullable=False),
        sa.Column("eval_id", sa.Integer, sa.ForeignKey("eval_results.id", ondelete="CASCADE"), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("summary", sa.String(500), nullable=False),
        sa.Column("report", sa.JSON, nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("queued_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_server_checks_status_id", "server_checks", ["status", "id"])
    op.create_index("ix_server_checks_release_id", "server_checks", ["release_id"])
    op.create_index("ix_server_checks_eval_id", "server_checks", ["eval_id"])
    op.add_column("projects", sa.Column("refuse_failing_checks", sa.Boolean(), nullable=False,
                                        server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("projects") as batch:
        batch.drop_column("refuse_failing_checks")
    op.drop_index("ix_server_checks_eval_id", table_name="server_checks")
    op.drop_index("ix_server_checks_release_id", table_name="server_checks")
    op.drop_index("ix_server_checks_status_id", table_name="server_checks")
    op.drop_table("server_checks")
