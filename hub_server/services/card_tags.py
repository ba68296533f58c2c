"""The tags an environment's card shows, kept on its project row so lists filter and page in SQL.

A card shows the tags (keywords) of the version :func:`~hub_server.services.versions.shown_version`
picks. Which version that is follows PEP 440 order, yanks and deletions, none of which SQL can
compute; so every change that can move it (an upload, a yank or un-yank, a file deleted) calls
:func:`refresh`, and ``projects.card_tags`` holds the tags as ``",a,b,"``: a tag matches exactly
with one ``LIKE '%,tag,%'``.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from hub_server.db.models import File, Project, Release
from hub_server.services.environments import split_tags
from hub_server.services.versions import VersionFacts, shown_version


def encode(keywords: str) -> str:
    """``",a,b,"`` from comma-separated keywords ("" when there are none)."""
    tags = split_tags(keywords)
    return f",{','.join(tags)}," if tags else ""


def decode(column: str) -> tuple[str, ...]:
    """The tags held in a ``card_tags`` value, in order."""
    return tuple(t for t in column.split(",") if t)


def as_tag(text: str) -> str | None:
    """``text`` as a stored tag would be spelled (``None`` when no tag can be spelled so)."""
    tags = split_tags([text])
    return tags[0] if tags and "," not in tags[0] else None


def tags_of(rows: Iterable[tuple[str, bool, bool, str]]) -> str:
    """The ``card_tags`` value from ``(version, yanked, has_files, keywords)`` of every version."""
    rows = list(rows)
    shown = shown_version(VersionFacts(v, y, f) for v, y, f, _k in rows)
    return next((encode(k) for v, _y, _f, k in rows if v == shown), "")


def refresh(session: Session, project_id: int) -> None:
    """Recompute one project's ``card_tags`` from its rows (in the transaction that changed them).

    The project row is locked first (``FOR NO KEY UPDATE`` on PostgreSQL; SQLite's writers are
    serial already): two uploads of one project committing at once would otherwise each write what
    their own snapshot saw, and the last commit could keep an older version's tags. A plain ``FOR
    UPDATE`` would deadlock with the ``KEY SHARE`` lock a new release row already holds.
    """
    session.flush()
    session.execute(select(Project.id).where(Project.id == project_id).with_for_update(key_share=True))
    live = exists().where(File.release_id == Release.id, File.deleted_at.is_(None))
    rows = session.execute(select(Release.version, Release.yanked, live, Release.keywords)
                           .where(Release.project_id == project_id)).all()
    project = session.get(Project, project_id)
    if project is not None:
        project.card_tags = tags_of((v, bool(y), bool(f), k or "") for v, y, f, k in rows)
