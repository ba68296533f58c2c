"""Catalogue search on many projects: the database filters (visibility, owner, text), orders and pages.

The expected answers come from a plain Python model of the same rules over the same rows, so
the SQL is checked against every combination of caller, text and page below.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pytest
from sqlalchemy import event
from sqlalchemy.orm import Session

from hub_server.auth.principal import Principal, authenticate
from hub_server.context import Hub
from hub_server.db.models import Owner, Project, Release
from hub_server.names import normalize
from hub_server.services import accounts, card_tags, catalog
from hub_server.services.listing import list_environments

TOPICS = ("math", "games", "code", "wordle")


@dataclass(frozen=True)
class Row:
    """What the Python model knows of one project."""

    owner: str
    normalized: str
    private: bool
    quarantined: bool
    summary: str
    keywords: str


@pytest.fixture
def catalogue(hub: Hub) -> tuple[list[Row], dict[str, str]]:
    """240 projects of three owners (an org among them); every 3rd private, every 7th quarantined."""
    rows: list[Row] = []
    tokens: dict[str, str] = {}
    with hub.db.write() as session:
        users = {}
        for name in ("alice", "bob"):
            users[name], tokens[name] = accounts.create_user(session, name, dt.timedelta(days=1))
        org = accounts.create_org(session, "lab", admin="alice")
        tokens["alice-scoped"] = accounts.issue_token(session, users["alice"], "read", expires_in=None,
                                                      scope_project="alice-env-3")
        owners: list[Owner] = [users["alice"], users["bob"], org]
        for i in range(240):
            owner = owners[i % 3]
            row = Row(owner.name, f"{owner.name}-env-{i}", i % 3 == 0 or i % 5 == 0, i % 7 == 0,
                      f"Environment {i} about {TOPICS[i % 4]} 100%", f"{TOPICS[(i + 1) % 4]},rl")
            project = Project(owner_id=owner.id, name=row.normalized, normalized=row.normalized,
                              private=row.private, quarantined=row.quarantined)
            session.add(project)
            session.flush()
            session.add(Release(project_id=project.id, version="1.0", canonical_version="1", summary=row.summary,
                                keywords=row.keywords))
            card_tags.refresh(session, project.id)  # what every write path of the Hub does
            rows.append(row)
    return rows, tokens


def _model(rows: list[Row], who: str | None, text: str, owner: str | None) -> list[str]:
    readers = {"alice": {"alice", "lab"}, "bob": {"bob"}, None: set()}

    def visible(row: Row) -> bool:
        if who == "alice-scoped":
            return not row.private or row.normalized == "alice-env-3"
        return not row.private or row.owner in readers[who]

    def matches(row: Row) -> bool:  # names compare normalised ("_" finds "-"), the rest as written
        needle = text.lower()
        return normalize(text) in row.normalized or needle in row.summary.lower() or needle in row.keywords.lower()

    return sorted(r.normalized for r in rows if not r.quarantined and visible(r) and (not owner or r.owner == owner)
                  and (not text or matches(r)))


def _principal(session: Session, tokens: dict[str, str], who: str | None) -> Principal | None:
    return authenticate(session, tokens[who]) if who else None


QUERIES = [("", None), ("wordle", None), ("ENV-1", None), ("math", "lab"), ("", "alice"), ("%", None),
           ("100%", None), ("_", None), ("nothing-like-it", None)]


def test_search_matches_the_model_page_by_page(hub: Hub, catalogue: tuple[list[Row], dict[str, str]]) -> None:
    rows, tokens = catalogue
    with hub.db.read() as session:
        for who in (None, "alice", "bob", "alice-scoped"):
            principal = _principal(session, tokens, who)
            for text, owner in QUERIES:
                pages = [[v.normalized for v in catalog.search(session, principal, text, owner, 17, start)]
                         for start in range(0, 260, 17)]
                assert all(len(page) <= 17 for page in pages)
                assert [name for page in pages for name in page] == _model(rows, who, text, owner), (who, text)


def test_private_projects_stay_hidden_from_others(hub: Hub, catalogue: tuple[list[Row], dict[str, str]]) -> None:
    rows, tokens = catalogue
    private = {r.normalized for r in rows if r.private and not r.quarantined}
    with hub.db.read() as session:
        for who in (None, "bob", "alice-scoped"):
            principal = _principal(session, tokens, who)
            seen = {v.normalized for v in catalog.search(session, principal, "", limit=500)}
            cards = {c.name for c in list_environments(session, principal, "env", limit=500).cards}
            allowed = {"bob": {r.normalized for r in rows if r.owner == "bob"}, None: set(),
                       "alice-scoped": {"alice-env-3"}}[who]
            assert seen & private == cards & private == private & allowed


def test_only_the_asked_page_is_loaded(hub: Hub, catalogue: tuple[list[Row], dict[str, str]]) -> None:
    loaded: list[str] = []

    def on_load(project: Project, _context: object) -> None:
        loaded.append(project.normalized)

    event.listen(Project, "load", on_load)
    try:
        with hub.db.read() as session:
            views = catalog.search(session, None, "env", limit=5, offset=10)
            search_loaded, loaded[:] = sorted(loaded), []
            listed = list_environments(session, None, "env", sort="name", limit=5, offset=10)
    finally:
        event.remove(Project, "load", on_load)
    assert search_loaded == [v.normalized for v in views] and len(views) == 5
    assert sorted(loaded) == [c.name for c in listed.cards] and len(listed.cards) == 5


def test_listing_pages_match_the_model(hub: Hub, catalogue: tuple[list[Row], dict[str, str]]) -> None:
    rows, tokens = catalogue
    by_name = {r.normalized: r for r in rows}
    with hub.db.read() as session:
        for who in (None, "alice"):
            principal = _principal(session, tokens, who)
            for text, owner in QUERIES:
                for tag in ("", "math", "rl"):
                    lists = [list_environments(session, principal, text, tag, owner, "name", 23, start)
                             for start in range(0, 260, 23)]
                    expected = [n for n in _model(rows, who, text, owner)
                                if not tag or tag in by_name[n].keywords.split(",")]
                    assert [c.name for page in lists for c in page.cards] == expected, (who, text, tag)
                    assert {page.total for page in lists} == {len(expected)}


def test_tag_filter_is_exact(hub: Hub,
                                                         catalogue: tuple[list[Row], dict[str, str]]) -> None:
    rows, _tokens = catalogue
    with hub.db.read() as session:
        cards = list_environments(session, None, tag="GAMES", limit=1000).cards
        assert list_environments(session, None, tag="game").cards == []  # "games" contains it, but tags are exact
    expected = {r.normalized for r in rows if not r.private and not r.quarantined and r.keywords.startswith("games,")}
    assert {c.name for c in cards} == expected and all("games" in c.tags for c in cards)
