"""Reading and curating what the Hub holds: project views, search, yank, visibility, deletion.

Everything here filters by what the caller may see: a private project of someone else, a
quarantined project and a deleted file are all simply "not found".
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from packaging.version import Version
from sqlalchemy import Select, false, func, or_, select
from sqlalchemy.orm import Session, selectinload

from hub_server.auth.principal import Principal, can_read, readable_projects
from hub_server.db.models import File, Owner, Project, Release, utcnow
from hub_server.errors import Conflict, Forbidden, NotFound
from hub_server.names import check_project_name, check_version, normalize, release_key
from hub_server.services import card_tags
from hub_server.services.accounts import get_owner
from hub_server.services.versions import VersionFacts, latest_of, shown_version


@dataclass(frozen=True)
class FileView:
    """One downloadable file as an index shows it."""

    filename: str
    version: str
    packagetype: str
    size: int
    sha256: str
    requires_python: str | None
    metadata_sha256: str | None
    uploaded_at: dt.datetime
    yanked: bool
    yanked_reason: str


@dataclass(frozen=True)
class ReleaseView:
    """One version and what is known about it."""

    version: str
    yanked: bool
    yanked_reason: str
    requires_python: str | None
    summary: str
    created_at: dt.datetime


@dataclass(frozen=True)
class ProjectView:
    """A project as the caller may see it: versions oldest first, files grouped by version."""

    owner: str
    name: str
    normalized: str
    private: bool
    summary: str
    description: str
    description_content_type: str
    releases: list[ReleaseView]
    files: list[FileView]

    @property
    def versions(self) -> list[str]:
        return [r.version for r in self.releases]

    @property
    def latest(self) -> str | None:
        """Newest non-yanked, non-pre-release version with files (else newest with files), as pip would pick."""
        return latest_of(self._facts())

    @property
    def shown(self) -> str | None:
        """The version a page shows when none is asked for: the latest, else the newest."""
        return shown_version(self._facts())

    def _facts(self) -> list[VersionFacts]:
        with_files = {f.version for f in self.files}
        return [VersionFacts(r.version, r.yanked, r.version in with_files) for r in self.releases]


def _visible(project: Project | None, principal: Principal | None) -> Project:
    if project is None or project.quarantined or not can_read(principal, project):
        raise NotFound("no such project")
    return project


def _view(project: Project) -> ProjectView:
    releases = sorted(project.releases, key=lambda r: Version(r.version))
    files = [
        FileView(f.filename, r.version, f.packagetype, f.size, f.sha256, f.requires_python, f.metadata_sha256,
                 f.uploaded_at, r.yanked, r.yanked_reason)
        for r in releases for f in sorted(r.files, key=lambda f: f.filename) if f.deleted_at is None
    ]
    newest = releases[-1] if releases else None
    return ProjectView(
        owner=project.owner.name, name=project.name, normalized=project.normalized, private=project.private,
        summary=newest.summary if newest else "", description=newest.description if newest else "",
        description_content_type=newest.description_content_type if newest else "",
        releases=[ReleaseView(r.version, r.yanked, r.yanked_reason, r.requires_python, r.summary, r.created_at)
                  for r in releases],
        files=files,
    )


def _load(session: Session, normalized: str) -> Project | None:
    return session.scalar(
        select(Project).where(Project.normalized == normalized)
        .options(selectinload(Project.releases).selectinload(Release.files), selectinload(Project.owner))
    )


def project_view(session: Session, principal: Principal | None, name: str, owner: str | None = None) -> ProjectView:
    """The project called ``name`` (any spelling), optionally required to belong to ``owner``."""
    project = _visible(_load(session, normalize(name)), principal)
    if owner is not None and project.owner.name != owner.lower():
        raise NotFound("no such project")
    return _view(project)


def list_projects(session: Session, principal: Principal | None, owner: str | None = None) -> list[tuple[str, str]]:
    """``(name, normalized)`` of every project the caller may see, optionally of one owner, by name."""
    query = select(Project).options(selectinload(Project.owner)).where(Project.quarantined.is_(False))
    if owner is not None:
        query = query.join(Owner, Project.owner_id == Owner.id).where(Owner.name == owner.lower())
    projects = session.scalars(query.order_by(Project.normalized))
    return [(p.name, p.normalized) for p in projects if can_read(principal, p)]


def matching_projects(principal: Principal | None, text: str = "", owner: str | None = None,
                      tag: str = "") -> Select[int]:
    """A query for the ids of projects the caller may see that match, all filtering done by the database.

    ``text`` (case-insensitive) must occur in the name, or in some version's summary or keywords;
    ``tag`` must be one of the tags the project's card shows (exactly, case-insensitive).
    Quarantined projects never match.
    """
    query = (select(Project.id).join(Owner, Project.owner_id == Owner.id)
             .where(Project.quarantined.is_(False), readable_projects(principal)))
    if owner:
        query = query.where(Owner.name == owner.lower())
    if text:
        lowered = text.lower()
        in_release = select(Release.project_id).where(or_(
            func.lower(Release.summary).contains(lowered, autoescape=True),
            func.lower(Release.keywords).contains(lowered, autoescape=True)))
        query = query.where(or_(Project.normalized.contains(normalize(text), autoescape=True),
                                Project.id.in_(in_release)))
    if tag:
        spelled = card_tags.as_tag(tag)
        query = query.where(Project.card_tags.contains(f",{spelled},", autoescape=True) if spelled else false())
    return query


def views_of(session: Session, ids: list[int]) -> list[ProjectView]:
    """The views of these projects (releases and files loaded in three queries), by normalised name."""
    if not ids:
        return []
    projects = session.scalars(
        select(Project).where(Project.id.in_(ids)).order_by(Project.normalized)
        .options(selectinload(Project.releases).selectinload(Release.files), selectinload(Project.owner)))
    return [_view(p) for p in projects]


def search(session: Session, principal: Principal | None, text: str = "", owner: str | None = None,
           limit: int = 50, offset: int = 0) -> list[ProjectView]:
    """Projects whose name, summary or keywords contain ``text`` (case-insensitive), by name.

    Only the asked-for page is loaded: visibility, filters, order, ``limit`` and ``offset`` are SQL.
    """
    page = matching_projects(principal, text, owner).order_by(Project.normalized).limit(limit).offset(offset)
    return views_of(session, list(session.scalars(page)))


def find_file(session: Session, principal: Principal | None, sha256: str, filename: str) -> File:
    """The live file with this content and name, if the caller may see its project."""
    file = session.scalar(select(File).where(File.filename == filename, File.sha256 == sha256))
    if file is None or file.deleted_at is not None:
        raise NotFound("no such file")
    _visible(file.release.project, principal)
    return file


def _managed(session: Session, principal: Principal, owner: str, name: str) -> Project:
    project = _load(session, normalize(name))
    if project is None or project.owner.name != owner.lower() or not principal.can_read(project):
        raise NotFound(f"no project {owner}/{name}")
    if not principal.can_publish(project.owner_id, project.normalized):
        raise Forbidden(f"this token may not change {owner}/{name}")
    return project


def set_yanked(session: Session, principal: Principal, owner: str, name: str, version: str,
               yanked: bool, reason: str = "") -> None:
    """Yank (PEP 592; reversible) or un-yank every file of one version."""
    project = _managed(session, principal, owner, name)
    canonical = release_key(check_version(version))
    release = next((r for r in project.releases if r.canonical_version == canonical), None)
    if release is None:
        raise NotFound(f"{owner}/{name} has no version {version}")
    release.yanked, release.yanked_reason = yanked, (reason[:500] if yanked else "")
    card_tags.refresh(session, project.id)


def delete_file(session: Session, principal: Principal, owner: str, name: str, filename: str) -> None:
    """Hide a file for good; its name stays taken (a tombstone), so other bytes can never take its place."""
    project = _managed(session, principal, owner, name)
    file = next((f for r in project.releases for f in r.files if f.filename == filename and f.deleted_at is None), None)
    if file is None:
        raise NotFound(f"{owner}/{name} has no file {filename!r}")
    file.deleted_at = utcnow()
    card_tags.refresh(session, project.id)


def create_project(session: Session, principal: Principal, owner: str, name: str, private: bool,
                   reserved: list[str]) -> Project:
    """Register a project before its first upload (how a private project is made)."""
    normalized = check_project_name(name, reserved)
    target = get_owner(session, owner)
    if not principal.can_publish(target.id, normalized):
        raise Forbidden(f"this token may not create projects under {owner!r}")
    if session.scalar(select(Project.id).where(Project.normalized == normalized)) is not None:
        raise Conflict(f"the project name {name!r} is taken on this Hub")
    project = Project(owner_id=target.id, name=name, normalized=normalized, private=private, quarantined=False)
    session.add(project)
    session.flush()
    return project


def set_private(session: Session, principal: Principal, owner: str, name: str, private: bool) -> None:
    """Make a project private (visible to its owner's members only) or public."""
    _managed(session, principal, owner, name).private = private


def set_refuse_failing_checks(session: Session, principal: Principal, owner: str, name: str, refuse: bool) -> None:
    """The owner's policy: versions failing the Hub's own check (``services/server_checks.py``) are yanked."""
    _managed(session, principal, owner, name).refuse_failing_checks = refuse


def set_quarantined(session: Session, name: str, quarantined: bool) -> None:
    """Hide a project from every index and page (an operator action, e.g. during a malware review)."""
    project = session.scalar(select(Project).where(Project.normalized == normalize(name)))
    if project is None:
        raise NotFound(f"no project {name!r}")
    project.quarantined = quarantined
