"""Card tags: the shown version's keywords, kept on the project row through every change that moves it."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from hub_server.auth.principal import authenticate
from hub_server.context import Hub
from hub_server.db import Database
from hub_server.db.models import File, Project, Release
from hub_server.services import catalog
from hub_server.services.card_tags import as_tag, decode, encode, refresh, tags_of
from hub_server.services.versions import VersionFacts, latest_of, shown_version
from tests.hub_server.web.envdists import publish


@pytest.mark.parametrize(("facts", "latest"), [
    ([("1.0", False, True), ("2.0", False, True)], "2.0"),
    ([("1.0", False, True), ("2.0", True, True)], "1.0"),          # yanked
    ([("1.0", False, True), ("2.0", False, False)], "1.0"),        # no files
    ([("1.0", False, True), ("2.0b1", False, True)], "1.0"),       # pre-release
    ([("2.0b1", False, True), ("2.0a1", False, True)], "2.0b1"),   # only pre-releases: the newest
    ([("10.0", False, True), ("9.0", False, True)], "10.0"),       # PEP 440 order, not text order
    ([("1.0", True, True)], None),
    ([], None),
])
def test_latest_is_what_pip_would_pick(facts: list[tuple[str, bool, bool]], latest: str | None) -> None:
    assert latest_of(VersionFacts(*f) for f in facts) == latest


def test_shown_version_falls_back_to_the_newest() -> None:
    assert shown_version([VersionFacts("1.0", True, True), VersionFacts("0.9", False, False)]) == "1.0"
    assert shown_version([]) is None


def test_encoding_is_exact_and_round_trips() -> None:
    assert encode(" Math, games ,math,, ") == ",math,games,"
    assert decode(encode("Math,games")) == ("math", "games")
    assert encode("") == "" and decode("") == ()
    assert tags_of([("1.0", False, True, "old"), ("2.0", False, True, "new"), ("3.0", False, False, "none")]) \
        == ",new,"


def test_a_tag_is_asked_for_as_it_is_stored() -> None:
    assert as_tag("  Math ") == "math"
    assert as_tag("deep   learning") == "deep learning"
    assert as_tag("a,b") is None and as_tag("") is None and as_tag(" , ") is None
    assert as_tag("x" * 80) == "x" * 50


def _tags(hub: Hub, name: str) -> tuple[str, ...]:
    with hub.db.read() as session:
        return decode(session.scalar(sa.select(Project.card_tags).where(Project.normalized == name)) or "")


def test_uploads_yanks_and_deletions_move_the_tags(hub: Hub, make_user: Callable[[str], str],
                                                   upload: Callable[..., httpx.Response], tmp_path: Path) -> None:
    alice = make_user("alice")
    publish(upload, alice, tmp_path, "demo-env", "0.1.0", tag="first")
    assert _tags(hub, "demo-env") == ("single-turn", "first")
    publish(upload, alice, tmp_path, "demo-env", "0.2.0", tag="second")
    publish(upload, alice, tmp_path, "demo-env", "0.3.0rc1", tag="candidate")
    assert _tags(hub, "demo-env") == ("single-turn", "second")  # a pre-release is not shown
    with hub.db.write() as session:
        catalog.set_yanked(session, authenticate(session, alice), "alice", "demo-env", "0.2.0", True)
    assert _tags(hub, "demo-env") == ("single-turn", "first")
    with hub.db.write() as session:
        catalog.set_yanked(session, authenticate(session, alice), "alice", "demo-env", "0.2.0", False)
    assert _tags(hub, "demo-env") == ("single-turn", "second")
    with hub.db.write() as session:
        principal = authenticate(session, alice)
        for filename in ("demo_env-0.2.0-py3-none-any.whl", "demo_env-0.2.0.tar.gz"):
            catalog.delete_file(session, principal, "alice", "demo-env", filename)
    assert _tags(hub, "demo-env") == ("single-turn", "first")


def test_migration_fills_the_column_for_an_existing_hub(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path}/hub.sqlite3")
    db.migrate("0003")
    now = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    release_rows = [  # (project, version, yanked, keywords, file deleted?)
        (1, "1.0", False, "old", False), (1, "2.0", False, "new,Fancy", False), (1, "3.0b1", False, "pre", False),
        (2, "0.5", True, "yanked-one", False), (2, "1.0", False, "gone", True),
        (3, "1.0", False, "", None),  # no file at all, no keywords
    ]
    with db.write_engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO owners (id, name, kind, created_at) VALUES (1, 'alice', 'user', :t)"),
                     {"t": now})
        for pid in (1, 2, 3, 4):
            conn.execute(sa.text("INSERT INTO projects (id, owner_id, name, normalized, private, quarantined,"
                                 " created_at) VALUES (:i, 1, :n, :n, 0, 0, :t)"), {"i": pid, "n": f"p{pid}", "t": now})
        for rid, (pid, version, yanked, keywords, deleted) in enumerate(release_rows, 1):
            conn.execute(sa.text(
                "INSERT INTO releases (id, project_id, version, canonical_version, yanked, yanked_reason,"
                " summary, description, description_content_type, keywords, created_at)"
                " VALUES (:r, :p, :v, :v, :y, '', '', '', '', :k, :t)"),
                {"r": rid, "p": pid, "v": version, "y": yanked, "k": keywords, "t": now})
            if deleted is not None:
                conn.execute(sa.text(
                    "INSERT INTO files (release_id, filename, packagetype, size, sha256, blake2_256,"
                    " uploaded_by_id, uploaded_at, deleted_at) VALUES (:r, :f, 'sdist', 1, 'x', 'y', 1, :t, :d)"),
                    {"r": rid, "f": f"f{rid}.tar.gz", "t": now, "d": now if deleted else None})
    db.migrate()
    with db.read() as session:
        got = dict(session.execute(sa.select(Project.normalized, Project.card_tags)).all())
    assert got == {"p1": ",new,fancy,", "p2": ",gone,", "p3": "", "p4": ""}
    db.dispose()


def test_two_writers_of_one_project_end_with_the_newest_versions_tags(
        hub: Hub, make_user: Callable[[str], str], upload: Callable[..., httpx.Response], tmp_path: Path) -> None:
    # On PostgreSQL (the scale path) both transactions run at once: without the row lock in refresh(),
    # each computes the tags from its own snapshot and the last commit wins, even with the older version.
    if hub.db.is_sqlite:
        pytest.skip("n/a on SQLite: its writers are serial (BEGIN IMMEDIATE): nothing to race")
    alice = make_user("alice")
    publish(upload, alice, tmp_path, "race-env", "0.1.0", tag="first")
    with hub.db.read() as session:
        project_id, user_id = session.execute(
            sa.select(Project.id, Project.owner_id).where(Project.normalized == "race-env")).one()
    both_inserted = threading.Barrier(2, timeout=30)
    errors: list[BaseException] = []

    def add(version: str, keywords: str) -> None:
        try:
            with hub.db.write() as session:
                release = Release(project_id=project_id, version=version, canonical_version=version,
                                  keywords=keywords)
                session.add(release)
                session.flush()
                session.add(File(release_id=release.id, filename=f"race_env-{version}.tar.gz", packagetype="sdist",
                                 size=1, sha256=version.ljust(64, "0"), blake2_256="0" * 64,
                                 uploaded_by_id=user_id))
                session.flush()
                both_inserted.wait()
                refresh(session, project_id)
        except BaseException as error:  # collected for the assertion below
            errors.append(error)

    for _round in range(3):  # either may commit first; each round adds a newer and an older version
        base = 10 * (_round + 1)
        threads = [threading.Thread(target=add, args=(f"{base}.1", "newer")),
                   threading.Thread(target=add, args=(f"{base}.0", "older"))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert _tags(hub, "race-env") == ("newer",), _round
