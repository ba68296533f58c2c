"""Listing environments: text and tag filters, sort orders, and private ones hidden from others."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from hub_server.auth.principal import authenticate
from hub_server.context import Hub
from hub_server.services import catalog
from hub_server.services.downloads import DownloadCounter
from hub_server.services.listing import list_environments
from tests.hub_server.web.envdists import publish


@pytest.fixture
def tokens(hub: Hub, make_user: Callable[[str], str], upload: Callable[..., httpx.Response],
           tmp_path: Path) -> dict[str, str]:
    alice, bob = make_user("alice"), make_user("bob")
    publish(upload, alice, tmp_path, "alpha-env", "0.1.0", tag="math", summary="Adds numbers.")
    publish(upload, alice, tmp_path, "beta-env", "0.1.0", tag="games", summary="Plays wordle.")
    publish(upload, bob, tmp_path, "gamma-env", "0.1.0", tag="math", summary="Proves theorems.")
    publish(upload, alice, tmp_path, "secret-env", "0.1.0", tag="math", summary="Hidden.")
    with hub.db.write() as session:
        catalog.set_private(session, authenticate(session, alice), "alice", "secret-env", True)
    counter = DownloadCounter(hub.db)
    for _ in range(3):
        counter.record("gamma_env-0.1.0-py3-none-any.whl")
    counter.record("beta_env-0.1.0-py3-none-any.whl")
    counter.flush()
    return {"alice": alice, "bob": bob}


def names(hub: Hub, token: str | None = None, **kwargs: str) -> list[str]:
    with hub.db.read() as session:
        principal = authenticate(session, token) if token else None
        return [card.name for card in list_environments(session, principal, **kwargs).cards]


def test_default_order_is_most_downloaded_and_private_ones_are_hidden(hub: Hub, tokens: dict[str, str]) -> None:
    assert names(hub) == ["gamma-env", "beta-env", "alpha-env"]
    assert names(hub, tokens["bob"]) == ["gamma-env", "beta-env", "alpha-env"]
    assert "secret-env" in names(hub, tokens["alice"])


def test_text_tag_and_owner_filters(hub: Hub, tokens: dict[str, str]) -> None:
    assert names(hub, text="wordle") == ["beta-env"]
    assert names(hub, tag="MATH", sort="name") == ["alpha-env", "gamma-env"]
    assert names(hub, text="theorems", tag="math") == ["gamma-env"]
    assert names(hub, tag="mat") == []  # tags match whole
    assert names(hub, owner="alice", sort="name") == ["alpha-env", "beta-env"]
    assert names(hub, text="nothing-like-this") == []
    assert names(hub, tag="  Math ", sort="name") == ["alpha-env", "gamma-env"]  # spelled as tags are stored
    assert names(hub, tag="math,single-turn") == []  # no tag holds a comma: not two tags' neighbours
    assert names(hub, tag="%") == names(hub, tag="_") == []


def test_cards_carry_tags_versions_and_counts(hub: Hub, tokens: dict[str, str]) -> None:
    with hub.db.read() as session:
        [card] = list_environments(session, None, text="gamma").cards
    assert (card.owner, card.latest, card.tags, card.downloads, card.private) == (
        "bob", "0.1.0", ("single-turn", "math"), 3, False)
    assert card.updated_at is not None and card.updated_at <= dt.datetime.now(dt.timezone.utc)


def test_unknown_sort_falls_back_to_downloads(hub: Hub, tokens: dict[str, str]) -> None:
    assert names(hub, sort="bogus") == names(hub)
    assert names(hub, sort="updated")[0] == "gamma-env"  # the newest upload


def test_pages_and_totals(hub: Hub, tokens: dict[str, str]) -> None:
    with hub.db.read() as session:
        pages = [list_environments(session, None, limit=2, offset=start) for start in (0, 2, 4)]
    assert [[c.name for c in page.cards] for page in pages] == [["gamma-env", "beta-env"], ["alpha-env"], []]
    assert {page.total for page in pages} == {3}


def test_a_project_without_versions_is_listed_last_when_sorted_by_update(
        hub: Hub, tokens: dict[str, str]) -> None:
    with hub.db.write() as session:
        catalog.create_project(session, authenticate(session, tokens["bob"]), "bob", "empty-env", False, [])
    assert names(hub, sort="updated")[-1] == "empty-env"
    assert names(hub, sort="name") == ["alpha-env", "beta-env", "empty-env", "gamma-env"]
    with hub.db.read() as session:
        [card] = list_environments(session, None, text="empty").cards
    assert (card.latest, card.tags, card.downloads, card.updated_at) == (None, (), 0, None)
