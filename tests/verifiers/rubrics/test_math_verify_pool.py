"""The math-verify worker pool, used directly (white-box where it checks that no worker is left behind)."""

from __future__ import annotations

import asyncio
import time

import pytest

from verifiers.errors import RewardFunctionError
from verifiers.rubrics import math_verify_pool
from verifiers.rubrics.math_verify_pool import verify_answer

STUCK = "9^{9^{9^{9}}}"  # sympy evaluates the tower in C, where no signal stops it


def _workers() -> list:
    pool = math_verify_pool._pool
    assert pool is not None
    return list(pool.executor._processes.values())


async def _wait_dead(processes: list, limit: float = 5.0) -> bool:
    deadline = time.monotonic() + limit
    while any(p.is_alive() for p in processes) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return not any(p.is_alive() for p in processes)


async def test_equal_and_different_answers():
    assert await verify_answer("\\frac{1}{2}", "0.5") is True
    assert await verify_answer("\\frac{1}{2}", "0.6") is False
    assert await verify_answer("x^2 + 2x + 1", "(x+1)^2") is True


async def test_a_timeout_raises_and_kills_the_workers():
    await verify_answer("1", "1")
    workers = _workers()
    with pytest.raises(RewardFunctionError, match="did not finish within 1 s"):
        await verify_answer("1", STUCK, timeout=1.0)
    assert await _wait_dead(workers)
    assert await verify_answer("2", "2") is True


async def test_a_cancelled_check_does_not_leave_its_worker_running():
    await verify_answer("1", "1")
    workers = _workers()
    task = asyncio.create_task(verify_answer("1", STUCK, timeout=60.0))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _wait_dead(workers)
