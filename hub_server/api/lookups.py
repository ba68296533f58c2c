"""One-query lookups for the two hot read paths: a project's simple page and a file download.

pip and uv ask for ``/simple/<name>/`` for every requirement of every install (from every index
they are given) and then fetch files, so these two requests dominate the Hub's traffic. Loading
them through the ORM (``services.catalog``: several queries, an object per row, lazy loads) cost
milliseconds each; here one prepared Core SELECT fetches just the columns they need. Visibility follows
``services.catalog``: quarantined projects, private projects the caller may not read, and deleted
files are "not found".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from packaging.version import Version
from sqlalchemy import Row, and_, bindparam, select
from sqlalchemy.orm import Session, aliased
from typing_extensions import Unpack

from hub_server.auth.principal import Principal
from hub_server.db.models import File, Owner, Project, Release
from hub_server.db.records import DamagedBlob
from hub_server.errors import NotFound
from hub_server.services.catalog import FileView, ProjectView, ReleaseView

_PAGE = (
    select(Project.private, Project.quarantined, Project.owner_id, Project.name, Owner.name.label("owner_name"),
           Release.version, Release.yanked, Release.yanked_reason,
           Release.requires_python.label("release_requires_python"), Release.created_at, File.filename,
           File.packagetype, File.size, File.sha256, File.requires_python, File.metadata_sha256, File.uploaded_at)
    .select_from(Project)
    .join(Owner, Owner.id == Project.owner_id)
    .outerjoin(Release, Release.project_id == Project.id)
    .outerjoin(File, and_(File.release_id == Release.id, File.deleted_at.is_(None)))
    .where(Project.normalized == bindparam("normalized"))
)
_DAMAGED, _DAMAGED_METADATA = aliased(DamagedBlob), aliased(DamagedBlob)
_FILE = (
    select(File.metadata_sha256, Project.private, Project.quarantined, Project.owner_id, Project.normalized,
           _DAMAGED.sha256.label("damaged"), _DAMAGED_METADATA.sha256.label("metadata_damaged"))
    .join(Release, Release.id == File.release_id)
    .join(Project, Project.id == Release.project_id)
    .outerjoin(_DAMAGED, _DAMAGED.sha256 == File.sha256)
    .outerjoin(_DAMAGED_METADATA, _DAMAGED_METADATA.sha256 == File.metadata_sha256)
    .where(File.filename == bindparam("filename"), File.sha256 == bindparam("sha256"), File.deleted_at.is_(None))
)

PageRows = tuple[Row[Unpack[tuple[Any, ...]]], ...]  # rows of any columns


def _check_visible(principal: Principal | None, private: bool, quarantined: bool, owner_id: int,
                   normalized: str) -> None:
    if quarantined:
        raise NotFound("no such project")
    if private and (principal is None or not principal.can_read(
            Project(owner_id=owner_id, normalized=normalized, private=True))):
        raise NotFound("no such project")


def page_rows(session: Session, principal: Principal | None, normalized: str, owner: str | None) -> PageRows:
    """Everything a simple page shows of project ``normalized``: one row per file (or file-less release).

    Rows are hashable and equal rows make equal pages, so they can key a cache of rendered pages.
    """
    rows = tuple(session.execute(_PAGE, {"normalized": normalized}).all())
    if not rows:
        raise NotFound("no such project")
    first = rows[0]
    _check_visible(principal, first.private, first.quarantined, first.owner_id, normalized)
    if owner is not None and first.owner_name != owner.lower():
        raise NotFound("no such project")
    return rows


def page_view(rows: PageRows, normalized: str) -> ProjectView:
    """The :class:`ProjectView` of :func:`page_rows` (without the README fields, which pages do not show)."""
    releases: dict[str, ReleaseView] = {}
    files: dict[str, list[FileView]] = {}
    for row in rows:
        if row.version is None:
            continue  # a project without releases yet
        releases[row.version] = ReleaseView(row.version, row.yanked, row.yanked_reason, row.release_requires_python,
                                            "", row.created_at)
        if row.filename is not None:
            files.setdefault(row.version, []).append(FileView(
                row.filename, row.version, row.packagetype, row.size, row.sha256, row.requires_python,
                row.metadata_sha256, row.uploaded_at, row.yanked, row.yanked_reason))
    ordered = sorted(releases.values(), key=lambda r: Version(r.version))
    first = rows[0]
    return ProjectView(
        owner=first.owner_name, name=first.name, normalized=normalized, private=first.private, summary="",
        description="", description_content_type="", releases=ordered,
        files=[f for r in ordered for f in sorted(files.get(r.version, []), key=lambda f: f.filename)],
    )


@dataclass(frozen=True)
class FileAccess:
    """What serving one file needs to know."""

    sha256: str
    private: bool
    metadata_sha256: str | None
    damaged: frozenset[str] = frozenset()  # which of the two blobs ``vf-hub admin verify`` quarantined


def file_access(session: Session, principal: Principal | None, sha256: str, filename: str) -> FileAccess:
    """The live file with this content and name, if the caller may see its project."""
    row = session.execute(_FILE, {"filename": filename, "sha256": sha256}).first()
    if row is None:
        raise NotFound("no such file")
    metadata_sha256, private, quarantined, owner_id, normalized, damaged, metadata_damaged = row
    try:
        _check_visible(principal, private, quarantined, owner_id, normalized)
    except NotFound:
        raise NotFound("no such file") from None
    return FileAccess(sha256=sha256, private=private, metadata_sha256=metadata_sha256,
                      damaged=frozenset(d for d in (damaged, metadata_damaged) if d is not None))
