"""Lists of environments for the web UI: search by text and tag, sorted, one card per environment.

Text search is the catalogue's (name, summary, keywords); visibility is the catalogue's too, so
a private environment never appears to someone who may not read it. Tags are the latest
version's keywords (the scaffold keeps them equal to ``[project].tags``). The database does the
filtering (visibility, owner, text, and "some version has this keyword"); only the projects that
match are loaded, and the exact tag check runs on those.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from hub_server.auth.principal import Principal
from hub_server.db.models import Project, Release
from hub_server.services import catalog
from hub_server.services.downloads import downloads_by_project
from hub_server.services.environments import split_tags

SORTS = ("downloads", "updated", "name")


@dataclass(frozen=True)
class EnvironmentCard:
    """One environment in a list."""

    owner: str
    name: str
    summary: str
    latest: str | None
    tags: tuple[str, ...]
    private: bool
    updated_at: dt.datetime | None
    downloads: int


def list_environments(session: Session, principal: Principal | None, text: str = "", tag: str = "",
                      owner: str | None = None, sort: str = "downloads") -> list[EnvironmentCard]:
    """Every environment the caller may see that matches ``text`` and carries ``tag`` (both optional)."""
    if sort not in SORTS:
        sort = "downloads"
    tag = tag.strip().lower()
    ids = list(session.scalars(catalog.matching_projects(principal, text.strip(), owner, keyword=tag)))
    views = catalog.views_of(session, ids)
    if not views:
        return []
    names = [v.normalized for v in views]
    releases = session.execute(
        select(Project.normalized, Release.version, Release.keywords, Release.created_at)
        .join(Release, Release.project_id == Project.id).where(Project.normalized.in_(names))).all()
    keywords = {(n, version): kw for n, version, kw, _created in releases}
    updated: dict[str, dt.datetime] = {}
    for n, _version, _kw, created in releases:
        updated[n] = max(created, updated.get(n, created))
    downloads = downloads_by_project(session, names)
    cards = []
    for view in views:
        shown = view.latest or (view.versions[-1] if view.versions else None)
        tags = split_tags(keywords.get((view.normalized, shown), "")) if shown else ()
        if tag and tag not in tags:
            continue
        cards.append(EnvironmentCard(view.owner, view.name, view.summary, view.latest, tags, view.private,
                                     updated.get(view.normalized), downloads.get(view.normalized, 0)))
    if sort == "downloads":
        cards.sort(key=lambda c: (-c.downloads, c.name.lower()))
    elif sort == "updated":
        epoch = dt.datetime.min.replace(tzinfo=dt.timezone.utc)
        cards.sort(key=lambda c: (c.updated_at or epoch, c.name.lower()), reverse=True)
    return cards
