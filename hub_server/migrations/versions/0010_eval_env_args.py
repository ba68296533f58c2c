"""A pushed result's environment arguments in a column of their own, and whether all its rollouts came.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07

A leaderboard row shows the run's ``env_args``; they were read out of the whole ``run_metadata`` blob, so a
page of results loaded every result's metadata (16 MiB each was accepted). They are copied into
``eval_results.env_args`` here (a dict, else ``{}``), and the app defers ``run_metadata`` and ``summary``.
``eval_results.rollouts_complete`` says every rollout of the run was pushed and its figures are theirs; results
from before are not known to be, so they start false (their leaderboard figures show as unverified).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_results = sa.table("eval_results", sa.column("id", sa.Integer), sa.column("run_metadata", sa.JSON),
                    sa.column("env_args", sa.JSON))


def upgrade() -> None:
    with op.batch_alter_table("eval_results") as batch:
        batch.add_column(sa.Column("env_args", sa.JSON, nullable=True))
        batch.add_column(sa.Column("rollouts_complete", sa.Boolean, nullable=False, server_default=sa.false()))
    bind = op.get_bind()
    for result_id, metadata in bind.execute(sa.select(_results.c.id, _results.c.run_metadata)).all():
        env_args = metadata.get("env_args") if isinstance(metadata, dict) else None
        bind.execute(sa.update(_results).where(_results.c.id == result_id)
                     .values(env_args=env_args if isinstance(env_args, dict) else {}))
    with op.batch_alter_table("eval_results") as batch:
        batch.alter_column("env_args", existing_type=sa.JSON, nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("eval_results") as batch:
        batch.drop_column("rollouts_complete")
        batch.drop_column("env_args")
