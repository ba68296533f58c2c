"""Sliding-window limits: budget per key, Retry-After, windows that slide."""

from __future__ import annotations

import pytest

from hub_server.errors import RateLimited
from hub_server.ratelimit import RateLimiter


def test_budget_per_key_then_429_until_the_window_slides() -> None:
    now = [100.0]
    limiter = RateLimiter(limit=3, window_s=60, clock=lambda: now[0])
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


def test_check_does_not_count() -> None:
    limiter = RateLimiter(limit=1)
    for _ in range(5):
        limiter.check("a", "x")
    limiter.hit("a", "x")
    with pytest.raises(RateLimited):
        limiter.check("a", "x")
