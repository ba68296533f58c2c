"""Lists of environments for the web UI: search by text and tag, sorted, paged, one card per environment.

Text search is the catalogue's (name, summary, keywords); visibility is the catalogue's too, so
a private environment never appears to someone who may not read it. A card's tags are those of
the version it shows (``projects.card_tags``, see :mod:`hub_server.services.card_tags`). The
database filters, sorts and pages; only the projects on the asked-for page are loaded.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from hub_server.auth.principal import Principal
from hub_server.db.models import File, Project, Release
from hub_server.db.records import DownloadCount
from hub_server.services import card_tags, catalog

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


@dataclass(frozen=True)
class EnvironmentList:
    """One page of cards and how many environments match in all."""

    cards: list[EnvironmentCard]
    total: int


def _downloads() -> ColumnElement[int]:
    return (select(func.coalesce(func.sum(DownloadCount.count), 0))
            .join(File, File.id == DownloadCount.file_id).join(Release, Release.id == File.release_id)
            .where(Release.project_id == Project.id).scalar_subquery())


def _updated() -> ColumnElement[dt.datetime]:
    return select(func.max(Release.created_at)).where(Release.project_id == Project.id).scalar_subquery()


def list_environments(session: Session, principal: Principal | None, text: str = "", tag: str = "",
                      owner: str | None = None, sort: str = "downloads", limit: int = 30,
                      offset: int = 0) -> EnvironmentList:
    """The environments the caller may see that match ``text`` and carry ``tag`` (both optional).

    ``sort``: most ``downloads`` first (the default, also for an unknown value), most recently
    ``updated`` first (environments without a version last), or by ``name``; ties by name.
    """
    matching = catalog.matching_projects(principal, text.strip(), owner, tag=tag.strip())
    total = session.scalar(select(func.count()).select_from(matching.subquery())) or 0
    downloads, updated = _downloads().label("downloads"), _updated().label("updated")
    order = {
        "updated": (updated.desc().nulls_last(), Project.normalized),
        "name": (Project.normalized,),
    }.get(sort, (downloads.desc(), Project.normalized))
    page = session.execute(matching.add_columns(Project.normalized, Project.card_tags, downloads, updated)
                           .order_by(*order).limit(limit).offset(offset)).all()
    views = {v.normalized: v for v in catalog.views_of(session, [row[0] for row in page])}
    cards = [
        EnvironmentCard(views[normalized].owner, views[normalized].name, views[normalized].summary,
                        views[normalized].latest, card_tags.decode(tags), views[normalized].private, at, int(count))
        for _id, normalized, tags, count, at in page
    ]
    return EnvironmentList(cards, total)
