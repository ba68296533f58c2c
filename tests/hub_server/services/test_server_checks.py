"""The check queue: workers racing for checks each take a different one, and a dead worker's claim is taken
back after its lease, at most three starts in all.

These run on SQLite here and on PostgreSQL in the scale pass (``scripts/test.sh``; ``tests/hub_server/scale.py``
points the ``hub`` fixture's database there), where concurrent claimers are separate connections that can
interleave between reading a row and writing it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from hub_server.context import Hub
from hub_server.db.checks import ERROR, FAILED, PASSED, QUEUED, RUNNING, ServerCheck
from hub_server.db.database import Database
from hub_server.db.models import Release
from hub_server.services import server_checks
from hub_server.testing.dists import make_wheel
from tests.hub_server.web.envdists import publish

WORKERS = 4


@pytest.fixture
def queued(hub: Hub, make_user: Callable[[str], str], upload: Callable[..., httpx.Response],
           tmp_path: Path) -> list[int]:
    """Six versions uploaded, each with its contract check queued; their ids, oldest first."""
    token = make_user("alice")
    for index in range(6):
        publish(upload, token, tmp_path, f"env-{index}", "0.1.0")
    with hub.db.read() as session:
        checks = list(session.scalars(select(ServerCheck).order_by(ServerCheck.id)))
    assert [c.status for c in checks] == [QUEUED] * 6
    return [c.id for c in checks]


def _claim_until_empty(url: str, barrier: threading.Barrier, taken: list[int]) -> None:
    db = Database(url)  # a worker of its own: its own engine and connections
    try:
        barrier.wait()
        while (claimed := server_checks.claim(db, stale_after_s=3600)) is not None:
            taken.append(claimed.id)
    finally:
        db.dispose()


def test_racing_workers_each_take_a_different_check(hub: Hub, queued: list[int]) -> None:
    taken: list[int] = []
    barrier = threading.Barrier(WORKERS)
    workers = [threading.Thread(target=_claim_until_empty, args=(hub.db.url, barrier, taken))
               for _ in range(WORKERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert sorted(taken) == queued  # every check taken, none twice
    with hub.db.read() as session:
        rows = list(session.scalars(select(ServerCheck)))
    assert {(r.status, r.attempts) for r in rows} == {(RUNNING, 1)}


def test_a_dead_workers_claim_is_taken_back_after_its_lease_three_starts_at_most(hub: Hub,
                                                                                  queued: list[int]) -> None:
    lease = 0.5
    first = server_checks.claim(hub.db, lease)
    assert first is not None and first.id == queued[0] and first.kind == "contract" and first.project == "env-0"
    for attempt in (2, 3):
        # its worker died: nothing finishes it; within the lease the next claimer takes the next check instead
        time.sleep(lease + 0.2)
        again = server_checks.claim(hub.db, lease)
        assert again is not None and again.id == queued[0], again
        with hub.db.read() as session:
            assert session.get(ServerCheck, queued[0]).attempts == attempt  # type: ignore[union-attr]
    time.sleep(lease + 0.2)
    # a third death: the check is given up as an error and the worker goes on to the rest of the queue
    following = [server_checks.claim(hub.db, lease) for _ in range(2)]
    assert [c.id if c else None for c in following] == queued[1:3]
    with hub.db.read() as session:
        given_up = session.get(ServerCheck, queued[0])
        assert given_up is not None
        assert (given_up.status, given_up.summary) == (ERROR, "the check was started 3 times and never finished")
        assert given_up.finished_at is not None


def test_a_claim_within_its_lease_is_left_alone(hub: Hub, queued: list[int]) -> None:
    taken = [server_checks.claim(hub.db, 3600) for _ in queued]
    assert [c.id if c else None for c in taken] == queued
    assert server_checks.claim(hub.db, 3600) is None  # all running, none stale


def test_a_version_is_one_release_however_spelt_and_each_of_its_wheels_is_checked(
        hub: Hub, make_user: Callable[[str], str], upload: Callable[..., httpx.Response], client: TestClient,
        tmp_path: Path) -> None:
    token = make_user("alice")
    publish(upload, token, tmp_path, "env-a", "0.1.0")
    first = server_checks.claim(hub.db, stale_after_s=3600)
    assert first is not None
    server_checks.finish(hub.db, first.id, PASSED, "ok", {})
    # the attack: the same version spelt "0.1", a wheel the first check never saw
    other = make_wheel(tmp_path / "other", "env-a", "0.1", body="import os\n")
    assert upload(token, other, "env-a", "0.1").status_code == 200
    with hub.db.read() as session:
        releases = list(session.scalars(select(Release)))
        assert [(r.version, r.canonical_version, len(r.files)) for r in releases] == [("0.1.0", "0.1", 3)]
        verdict = server_checks.contract_check(session, releases[0].id)
    assert verdict is not None and verdict.status == QUEUED and verdict.filename == other.name  # not "passed"
    second = server_checks.claim(hub.db, stale_after_s=3600)
    assert second is not None and second.wheel_filename == other.name
    server_checks.finish(hub.db, second.id, FAILED, "it failed", {})
    with hub.db.read() as session:
        verdict = server_checks.contract_check(session, releases[0].id)
        assert verdict is not None and (verdict.status, verdict.filename) == (FAILED, other.name)
        assert server_checks.contract_checks(session, "env-a")["0.1.0"].status == FAILED
    page = client.get("/simple/env-a/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}).json()
    assert sorted(f["filename"] for f in page["files"]) == sorted(["env_a-0.1.0-py3-none-any.whl",
                                                                   "env_a-0.1.0.tar.gz", other.name])


def test_the_queue_is_shared_fairly_between_publishers(hub: Hub, make_user: Callable[[str], str],
                                                       upload: Callable[..., httpx.Response], tmp_path: Path) -> None:
    alice, bob = make_user("alice"), make_user("bob")
    for index in range(5):  # alice fills the queue first
        publish(upload, alice, tmp_path, f"alice-env-{index}", "0.1.0")
    publish(upload, bob, tmp_path, "bob-env", "0.1.0")
    order = []
    while (claimed := server_checks.claim(hub.db, stale_after_s=3600)) is not None:
        order.append(claimed.project)
        server_checks.finish(hub.db, claimed.id, PASSED, "ok", {})
    # first in, first out would have served bob last; each requester takes a turn instead
    assert order[:3] == ["alice-env-0", "bob-env", "alice-env-1"] and sorted(order) == sorted(set(order))
