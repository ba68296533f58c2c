"""Lists of environments for the web UI: search by text and tag, sorted, paged, one card per environment.

Text search is the catalogue's (name, summary, keywords); visibility is the catalogue's too, so
a private environment never appears to someone who may not read it. A card's tags are those of
the version it shows (``projects.card_tags``, see :mod:`hub_server.services.card_tags`). The
database filters, sorts and pages; only the projects on the asked-for page are loaded.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import ScalarSelect, func, select
from sqlalchemy.orm import Session

from hub_server.auth.principal import Principal
from hub_server.db.models import Project, Release
from hub_server.services import card_tags, catalog
from hub_server.services.downloads import downloads_column

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


def _updated() -> ScalarSelect[dt.datetime]:
    return select(func.max(Release.created_at)).where(Release.project_id == Project.id).scalar_subquery()


def list_environments(session: Session, principal: Principal | None, text: str = "", tag: str = "",
                      owner: str | None = None, sort: str = "downloads", limit: int = 30,
                      offset: int = 0) -> EnvironmentList:
    """The environments the caller may see that match ``text`` and carry ``tag`` (both optional).

    ``sort``: most ``downloads`` first (the default, also for an unknown value), most recently
    ``updated`` first (environments without a version last), or by ``name``; ties by name.
    """
    matching = catalog.matching_projects(principal, text.strip(), owner, tag=tag.strip())
    downloads, updated = downloads_column().label("downloads"), _updated().label("updated")
    order = {
        "updated": (updated.desc().nulls_last(), Project.normalized),
        "name": (Project.normalized,),
    }.get(sort, (downloads.desc(), Project.normalized))
    # The total rides on the page's own rows (one statement, one snapshot, also on PostgreSQL).
    total = func.count().over().label("total")
    page = session.execute(matching.add_columns(Project.normalized, Project.card_tags, downloads, updated, total)
                           .order_by(*order).limit(limit).offset(offset)).all()
    if not page:
        return EnvironmentList([], session.scalar(select(func.count()).select_from(matching.subquery())) or 0)
    views = {v.normalized: v for v in catalog.views_of(session, [row[0] for row in page])}
    cards = []
    for _id, normalized, tags, count, at, _total in page:
        view = views[normalized]
        cards.append(EnvironmentCard(view.owner, view.name, view.summary, view.latest, card_tags.decode(tags),
                                     view.private, at, int(count)))
    return EnvironmentList(cards, page[0].total)
