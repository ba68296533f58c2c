"""Each release keeps its README rendered once, at upload, instead of rendering it on every page view.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01

The columns start empty for existing releases: rendering every README here would make the
upgrade as slow as the READMEs are long, so each is rendered on its first page view instead
and stored then (``hub_server.services.release_readme``), once.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("releases", sa.Column("readme_html", sa.Text(), nullable=True))
    op.add_column("releases", sa.Column("readme_tables", sa.Text(), nullable=True))
    op.add_column("releases", sa.Column("readme_renderer", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("releases") as batch:
        batch.drop_column("readme_renderer")
        batch.drop_column("readme_tables")
        batch.drop_column("readme_html")
