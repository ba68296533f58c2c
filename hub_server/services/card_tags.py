"""The tags an environment's card shows, kept on its project row so lists filter and page in SQL.

A card shows the tags (keywords) of the version an index would pick: the newest non-yanked,
non-pre-release version with files, else the newest with files, else the newest version. Which
version that is follows PEP 440 order, yanks and deletions, none of which SQL can compute; so
every change that can move it (an upload, a yank or un-yank, a file deleted) calls
:func:`refresh`, and ``projects.card_tags`` holds the tags as ``",a,b,"``: a tag matches exactly
with one ``LIKE '%,tag,%'``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from packaging.version import Version
from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from hub_server.db.models import File, Project, Release
from hub_server.services.environments import split_tags


@dataclass(frozen=True)
class VersionFacts:
    """What decides whether a version is the one an index picks."""

    version: str
    yanked: bool
    has_files: bool


def latest_of(versions: Iterable[VersionFacts]) -> str | None:
    """Newest non-yanked, non-pre-release version with files (else newest with files), as pip would pick."""
    ordered = sorted(versions, key=lambda v: Version(v.version))
    candidates = [v for v in ordered if v.has_files and not v.yanked]
    stable = [v for v in candidates if not Version(v.version).is_prerelease]
    pick = stable or candidates
    return pick[-1].version if pick else None


def shown_version(versions: Iterable[VersionFacts]) -> str | None:
    """The version a card and an environment page show: the latest, else the newest."""
    versions = list(versions)
    newest = max(versions, key=lambda v: Version(v.version), default=None)
    return latest_of(versions) or (newest.version if newest else None)


def encode(keywords: str) -> str:
    """``",a,b,"`` from comma-separated keywords ("" when there are none)."""
    tags = split_tags(keywords)
    return f",{','.join(tags)}," if tags else ""


def decode(column: str) -> tuple[str, ...]:
    """The tags held in a ``card_tags`` value, in order."""
    return tuple(t for t in column.split(",") if t)


def tags_of(rows: Iterable[tuple[str, bool, bool, str]]) -> str:
    """The ``card_tags`` value from ``(version, yanked, has_files, keywords)`` of every version."""
    rows = list(rows)
    shown = shown_version(VersionFacts(v, y, f) for v, y, f, _k in rows)
    return next((encode(k) for v, _y, _f, k in rows if v == shown), "")


def refresh(session: Session, project_id: int) -> None:
    """Recompute one project's ``card_tags`` from its rows (call after the change is flushed)."""
    session.flush()
    live = exists().where(File.release_id == Release.id, File.deleted_at.is_(None))
    rows = session.execute(select(Release.version, Release.yanked, live, Release.keywords)
                           .where(Release.project_id == project_id)).all()
    project = session.get(Project, project_id)
    if project is not None:
        project.card_tags = tags_of((v, bool(y), bool(f), k or "") for v, y, f, k in rows)
