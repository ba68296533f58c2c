"""Download counts: tallied per worker, added to the database in batches, summed per project."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from hub_server.context import Hub
from hub_server.db.models import Project
from hub_server.services.downloads import DownloadCounter, downloads_column, project_downloads
from tests.hub_server.web.envdists import publish

TODAY = dt.date(2026, 11, 20)


@pytest.fixture
def files(hub: Hub, make_user: Callable[[str], str], upload: Callable[..., httpx.Response],
          tmp_path: Path) -> dict[str, str]:
    token = make_user("alice")
    wheel1, sdist1 = publish(upload, token, tmp_path, "demo-env", "0.1.0")
    wheel2, _sdist2 = publish(upload, token, tmp_path, "demo-env", "0.2.0")
    publish(upload, token, tmp_path, "other-env", "1.0.0")
    return {"wheel1": wheel1.name, "sdist1": sdist1.name, "wheel2": wheel2.name}


def test_flushes_add_up_per_file_day_and_version(hub: Hub, files: dict[str, str]) -> None:
    counter = DownloadCounter(hub.db)
    for _ in range(3):
        counter.record(files["wheel1"], TODAY)
    counter.record(files["sdist1"], TODAY - dt.timedelta(days=40))
    counter.record(files["wheel2"], TODAY)
    counter.flush()
    counter.record(files["wheel1"], TODAY)  # a second batch adds to the same row
    counter.record("not-a-file-1.0-py3-none-any.whl", TODAY)  # ignored
    counter.flush()
    with hub.db.read() as session:
        stats = project_downloads(session, "demo-env", today=TODAY)
        totals = dict(session.execute(select(Project.normalized, downloads_column())).all())
    assert totals == {"demo-env": 6, "other-env": 0}
    assert (stats.total, stats.last_30_days, stats.by_version) == (6, 5, {"0.1.0": 5, "0.2.0": 1})


def test_a_flush_is_due_after_enough_downloads_or_time(hub: Hub, files: dict[str, str]) -> None:
    counter = DownloadCounter(hub.db, flush_every=3, flush_seconds=3600)
    assert not counter.due()
    counter.record(files["wheel1"])
    counter.record(files["wheel1"])
    assert not counter.due()
    counter.record(files["wheel1"])
    assert counter.due()
    counter.flush()
    assert not counter.due()
    counter = DownloadCounter(hub.db, flush_every=1000, flush_seconds=0)
    counter.record(files["wheel1"])
    assert counter.due()


def test_two_workers_counting_at_once_lose_nothing(hub: Hub, files: dict[str, str]) -> None:
    workers = [DownloadCounter(hub.db) for _ in range(4)]

    def work(counter: DownloadCounter) -> None:
        for _ in range(5):
            for _ in range(10):
                counter.record(files["wheel2"], TODAY)
            counter.flush()

    threads = [threading.Thread(target=work, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with hub.db.read() as session:
        assert project_downloads(session, "demo-env", today=TODAY).by_version == {"0.2.0": 200}
