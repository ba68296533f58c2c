"""Reward functions under a deadline: hangs cost one score, sync functions leave the event loop free, and
functions that need the main thread (math_verify's signal timeouts) still score what they scored before."""

from __future__ import annotations

import asyncio
import threading
import time

import math_verify
import pytest

import verifiers as vf
from verifiers.errors import UsageError
from verifiers.rubrics import deadline
from verifiers.rubrics.deadline import ScoringTimeoutError, call_reward

AVAILABLE = {"prompt": "p", "completion": "c", "answer": "a", "state": {}}


async def test_sync_and_async_functions_get_the_arguments_they_ask_for():
    def sync(answer):
        return answer * 2

    async def asynchronous(completion, answer):
        return completion + answer

    assert await call_reward(sync, AVAILABLE, 5.0) == "aa"
    assert await call_reward(asynchronous, AVAILABLE, 5.0) == "ca"
    assert await call_reward(sync, AVAILABLE, None) == "aa"


async def test_a_sync_function_runs_off_the_event_loop():
    seen: list[str] = []

    def where():
        seen.append(threading.current_thread().name)
        return 1.0

    await call_reward(where, AVAILABLE, 5.0)
    assert seen == ["reward-worker"]


async def test_a_hanging_async_function_is_cancelled_at_its_deadline():
    cancelled = asyncio.Event()

    async def hangs():
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    start = time.perf_counter()
    with pytest.raises(ScoringTimeoutError, match="'hangs' did not finish within 0.2 s"):
        await call_reward(hangs, AVAILABLE, 0.2)
    assert time.perf_counter() - start < 2.0
    assert cancelled.is_set()


async def test_a_hanging_sync_function_costs_its_deadline_and_leaves_a_worker_for_the_next_call():
    release = threading.Event()

    def hangs():
        release.wait(30)
        return 1.0

    try:
        stuck_before = deadline._WORKERS.stuck
        with pytest.raises(ScoringTimeoutError):
            await call_reward(hangs, AVAILABLE, 0.2)
        assert deadline._WORKERS.stuck == stuck_before + 1
        # the loop was never blocked and the next call is served by another worker
        assert await call_reward(lambda: 2.0, AVAILABLE, 5.0) == 2.0
    finally:
        release.set()
    for _ in range(100):
        if deadline._WORKERS.stuck == stuck_before:
            break
        await asyncio.sleep(0.02)
    assert deadline._WORKERS.stuck == stuck_before  # the thread came back when the call ended


async def test_a_slow_sync_function_does_not_stall_other_work_on_the_loop():
    def slow():
        time.sleep(0.5)
        return 1.0

    ticks = 0

    async def ticker():
        nonlocal ticks
        for _ in range(20):
            await asyncio.sleep(0.01)
            ticks += 1

    await asyncio.gather(call_reward(slow, AVAILABLE, 5.0), ticker())
    assert ticks == 20


async def test_a_sync_function_returning_an_awaitable_is_awaited_within_the_same_deadline():
    class AsyncCallable:  # an object with an async __call__ is not a coroutine function
        async def __call__(self, completion):
            await asyncio.sleep(3600)

    with pytest.raises(ScoringTimeoutError):
        await call_reward(AsyncCallable(), AVAILABLE, 0.2)


async def test_math_verify_with_its_signal_timeouts_scores_as_on_the_main_thread():
    # math_verify's default timeouts install SIGALRM handlers, which only the main thread may do; a reward
    # function that catches everything would score 0.0 on a worker thread without a word.
    def correct(completion, answer):
        try:
            return float(math_verify.verify(math_verify.parse(answer), math_verify.parse(completion)))
        except Exception:
            return 0.0

    available = {**AVAILABLE, "completion": "The answer is $\\frac{1}{2}$", "answer": "$0.5$"}
    assert threading.current_thread() is threading.main_thread()
    assert await call_reward(correct, available, 5.0) == 1.0
    assert await call_reward(correct, available, 5.0) == 1.0  # remembered: straight to the loop's thread


async def test_the_rubric_scores_a_hang_zero_counts_it_and_keeps_the_other_rollouts():
    async def sometimes_hangs(completion):
        if completion == "hang":
            await asyncio.sleep(3600)
        return 1.0

    def blocks(completion):
        if completion == "block":
            time.sleep(3)
        return 0.5

    rubric = vf.Rubric(funcs=[sometimes_hangs, blocks], scoring_timeout=0.3)
    states = [{"prompt": [], "completion": c, "answer": "", "input": {}} for c in ("ok", "hang", "block")]
    start = time.perf_counter()
    await asyncio.gather(*(rubric.score_rollout(state) for state in states))
    assert time.perf_counter() - start < 2.5
    assert [s["reward"] for s in states] == [1.5, 0.5, 1.0]
    assert rubric.failure_counts == {"sometimes_hangs": 1, "blocks": 1}
    assert "did not finish within 0.3 s" in states[1]["scoring_errors"]["sometimes_hangs"]


def test_the_scoring_timeout_is_checked_and_reaches_every_rubric_of_a_group():
    rubric = vf.Rubric(funcs=[lambda completion: 1.0])
    assert rubric.scoring_timeout == deadline.DEFAULT_SCORING_TIMEOUT_S
    for bad in (0, -1.0, "60", True, float("nan")):
        with pytest.raises(UsageError, match="scoring_timeout"):
            vf.Rubric(scoring_timeout=bad)
    inner = vf.Rubric(funcs=[lambda completion: 1.0])
    group = vf.RubricGroup([inner])
    group.set_scoring_timeout(12)
    assert inner.scoring_timeout == 12.0
    group.set_scoring_timeout(None)
    assert inner.scoring_timeout is None
