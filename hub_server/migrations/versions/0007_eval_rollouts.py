"""The rollouts pushed with an evaluation result (``vf-eval --push``), shown on the result's pages.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03

Empty at upgrade: results pushed before it have no rollouts (their pages say so).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "eval_rollouts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("eval_id", sa.Integer, sa.ForeignKey("eval_results.id", ondelete="CASCADE"), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("example_id", sa.Integer, nullable=False),
        sa.Column("rollout_index", sa.Integer, nullable=False),
        sa.Column("reward", sa.Float, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("record", sa.JSON, nullable=False),
    )
    op.create_index("ix_eval_rollouts_eval_position", "eval_rollouts", ["eval_id", "position"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_eval_rollouts_eval_position", table_name="eval_rollouts")
    op.drop_table("eval_rollouts")
