"""Sliding-window limits in the database: budget per key, Retry-After, windows that slide, one budget
for every limiter (every app worker) on the same database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from hub_server import Settings
from hub_server.db import Database, RateEvent
from hub_server.errors import RateLimited
from hub_server.ratelimit import RateLimiter


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    """The test's database: SQLite in tmp_path, or a fresh PostgreSQL schema on the scale path."""
    database = Database(Settings(data_dir=tmp_path).resolved_database_url())
    database.migrate()
    yield database
    database.dispose()


def test_budget_per_key_then_429_until_the_window_slides(db: Database) -> None:
    now = [100.0]
    limiter = RateLimiter(db, "writes", limit=3, window_s=60, clock=lambda: now[0])
    for _ in range(3):
        limiter.hit("a", "writes")
    with pytest.raises(RateLimited) as raised:
        limiter.hit("a", "writes")
    assert raised.value.retry_after == 60 and raised.value.status == 429
    limiter.hit("b", "writes")  # other keys are unaffected
    now[0] += 30
    with pytest.raises(RateLimited) as later:
        limiter.check("a", "writes")
    assert later.value.retry_after == 30
    now[0] += 30.5
    limiter.hit("a", "writes")


def test_check_does_not_count_and_a_refused_hit_is_not_counted(db: Database) -> None:
    now = [0.0]
    limiter = RateLimiter(db, "x", limit=1, clock=lambda: now[0])
    for _ in range(5):
        limiter.check("a", "x")
    limiter.hit("a", "x")
    for _ in range(5):
        with pytest.raises(RateLimited):
            limiter.hit("a", "x")
    now[0] += 61  # only the one counted event had to expire
    limiter.hit("a", "x")


def test_two_limiters_on_one_database_share_the_budget_and_scopes_do_not(db: Database) -> None:
    other_worker = Database(db.url)  # another process's engines on the same database
    now = [0.0]
    first = RateLimiter(db, "failed_auth", limit=4, clock=lambda: now[0])
    second = RateLimiter(other_worker, "failed_auth", limit=4, clock=lambda: now[0])
    for limiter in (first, second, first, second):
        limiter.hit("10.0.0.1", "failed authentications")
    for limiter in (first, second):
        with pytest.raises(RateLimited):
            limiter.check("10.0.0.1", "failed authentications")
    RateLimiter(db, "writes", limit=4, clock=lambda: now[0]).hit("10.0.0.1", "writes")  # its own budget
    other_worker.dispose()


def test_expired_events_are_deleted_and_long_keys_are_cut(db: Database) -> None:
    now = [0.0]
    limiter = RateLimiter(db, "writes", limit=100, window_s=60, clock=lambda: now[0])
    for i in range(20):
        limiter.hit(f"address-{i}", "writes")
    now[0] += 61
    limiter.hit("x" * 500, "writes")
    limiter.hit("x" * 500, "writes")
    with db.read() as session:
        rows = session.execute(select(RateEvent.key, func.count()).group_by(RateEvent.key)).all()
    assert rows == [("x" * 200, 2)]


def test_hit_all_counts_each_key_on_its_own_budget_or_none_of_them(db: Database) -> None:
    limiter = RateLimiter(db, "failed_auth", limit=2, clock=lambda: 0.0)
    limiter.hit_all(["address:a", "token:t"], "failures")
    limiter.hit_all(["address:b", "token:t"], "failures")
    with pytest.raises(RateLimited):
        limiter.hit_all(["address:c", "token:t"], "failures")  # token:t is used up ...
    limiter.hit_all(["address:c"], "failures")  # ... and address:c was not counted by the refused hit
    limiter.hit_all(["address:c"], "failures")
    with pytest.raises(RateLimited):
        limiter.check("address:c", "failures")
