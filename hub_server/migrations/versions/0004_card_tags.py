"""The tags each project's card shows, on the project row, so web lists filter, sort and page in SQL.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections import defaultdict

import sqlalchemy as sa
from alembic import op
from packaging.version import Version

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# The columns this revision reads and writes, as they are at this revision (not the app's models).
_projects = sa.table("projects", sa.column("id", sa.Integer), sa.column("card_tags", sa.String))
_releases = sa.table("releases", sa.column("id", sa.Integer), sa.column("project_id", sa.Integer),
                     sa.column("version", sa.String), sa.column("yanked", sa.Boolean),
                     sa.column("keywords", sa.String))
_files = sa.table("files", sa.column("release_id", sa.Integer), sa.column("deleted_at", sa.DateTime))


def _tags_of(versions: list[tuple[str, bool, bool, str]]) -> str:
    """``",a,b,"``: the keywords of the version a card shows, by the rules of this revision.

    Written out here rather than imported, so later changes to the app cannot change what this
    revision did (hub_server.services.card_tags is the live twin).
    """
    ordered = sorted(versions, key=lambda v: Version(v[0]))
    candidates = [v for v in ordered if v[2] and not v[1]]
    stable = [v for v in candidates if not Version(v[0]).is_prerelease]
    chosen = stable or candidates or ordered
    if not chosen:
        return ""
    shown = chosen[-1]
    tags = dict.fromkeys(" ".join(word.split())[:50].lower() for word in shown[3].split(","))
    tags.pop("", None)
    return f",{','.join(list(tags)[:30])}," if tags else ""


def upgrade() -> None:
    op.add_column("projects", sa.Column("card_tags", sa.String(1600), nullable=False, server_default=""))
    live = sa.exists().where(_files.c.release_id == _releases.c.id, _files.c.deleted_at.is_(None))
    rows = op.get_bind().execute(sa.select(_releases.c.project_id, _releases.c.version, _releases.c.yanked,
                                           live, _releases.c.keywords))
    by_project: dict[int, list[tuple[str, bool, bool, str]]] = defaultdict(list)
    for project_id, version, yanked, has_files, keywords in rows:
        by_project[project_id].append((version, bool(yanked), bool(has_files), keywords or ""))
    for project_id, versions in by_project.items():
        op.get_bind().execute(sa.update(_projects).where(_projects.c.id == project_id)
                              .values(card_tags=_tags_of(versions)))


def downgrade() -> None:
    with op.batch_alter_table("projects") as batch:
        batch.drop_column("card_tags")
