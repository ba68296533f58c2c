"""Run math-verify in worker processes, with a hard timeout.

math-verify bounds its own parsing and comparison with ``signal.alarm``, which
only works in a process's main thread, and a pathological expression (a huge
power tower, say) can still spin in C code where no signal reaches it. So
every check runs in the main thread of a worker process:

* the event loop never blocks (a check is awaited, not run, by the caller);
* math-verify's own timeouts work, whichever thread scores;
* a check that outlives the hard timeout has its pool's workers killed and the
  pool replaced, so one bad answer cannot hang a run.

The pool is shared by the whole process, created on first use, sized to the
CPU count, and started with ``spawn``, never ``fork``: forking an asyncio
process that runs threads can deadlock the child. Workers load math-verify
when they start, and the timeout of a check only begins once they have.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import weakref
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from verifiers.errors import RewardFunctionError

#: Default hard limit, in seconds, on one answer check (worker start-up not included).
DEFAULT_TIMEOUT_SECONDS = 10.0
#: Limit on starting the workers (a spawn and the import of sympy, slow on a busy machine).
STARTUP_TIMEOUT_SECONDS = 120.0


@dataclass
class _Pool:
    executor: ProcessPoolExecutor
    ready: list[Future[int]]  # one start-up task per worker; all done once the pool has started


_lock = threading.Lock()
_pool: _Pool | None = None
_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()


def pool_size() -> int:
    """Worker processes in the shared pool: one per CPU."""
    return max(1, os.cpu_count() or 1)


def verify_boxed(answer: str, response: str) -> bool:
    """Whether ``response`` is mathematically equal to ``answer`` (runs inside a worker).

    Both are wrapped in ``\\boxed{}`` so math-verify reads each as a final answer.
    """
    from math_verify import parse, verify

    gold = parse(f"\\boxed{{{answer}}}")
    predicted = parse(f"\\boxed{{{response}}}")
    return bool(verify(gold, predicted))


def _start_worker(all_started: Any) -> None:
    """Worker initializer: load math-verify and sympy, then wait for the pool's other workers.

    So once any worker takes a task, every worker is ready, and a check's
    timeout never includes waiting for a worker that is still starting.
    """
    verify_boxed("1", "1")
    all_started.wait(STARTUP_TIMEOUT_SECONDS)


async def verify_answer(answer: str, response: str, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> bool:
    """Check ``response`` against ``answer`` in the worker pool.

    Raises:
        RewardFunctionError: the check took longer than ``timeout`` seconds or
            killed its worker (the pool is replaced in both cases).
    """
    # The timeout should measure the check, not a queue in front of it, so no
    # more checks are in flight per event loop than there are workers.
    async with _slot(asyncio.get_running_loop()):
        try:
            return await _check_once(answer, response, timeout)
        except BrokenProcessPool:
            pass  # another check's timeout may have replaced the pool under this one: one more try
        try:
            return await _check_once(answer, response, timeout)
        except BrokenProcessPool:
            raise RewardFunctionError(
                f"a math-verify worker process died while checking response {response[:80]!r}. If every check "
                "fails so, read the worker's error above; a script that scores at import time needs an "
                "`if __name__ == '__main__':` guard, because workers are started with spawn"
            ) from None


async def _check_once(answer: str, response: str, timeout: float) -> bool:
    pool = _current_pool()
    await _started(pool)
    try:
        future = asyncio.wrap_future(pool.executor.submit(verify_boxed, answer, response))
    except RuntimeError:  # another thread retired this pool between lookup and submit
        raise BrokenProcessPool("the pool was replaced") from None
    try:
        return await asyncio.wait_for(future, timeout)
    except asyncio.TimeoutError:
        _replace(pool)
        raise RewardFunctionError(
            f"math-verify did not finish within {timeout:g} s on response {response[:80]!r}; "
            "its worker was killed and the pool replaced"
        ) from None
    except BrokenProcessPool:
        _replace(pool)
        raise
    except asyncio.CancelledError:
        # The worker keeps running an abandoned check (maybe forever); left
        # alone it would hold a worker and keep the process from exiting.
        _replace(pool)
        raise


async def _started(pool: _Pool) -> None:
    if any(f.cancelled() for f in pool.ready):  # the pool was retired while starting
        raise BrokenProcessPool("the pool was replaced")
    if all(f.done() and not f.exception() for f in pool.ready):
        return
    # Shielded: a caller cancelled while waiting must not cancel the shared start-up tasks.
    started = asyncio.shield(asyncio.gather(*(asyncio.wrap_future(f) for f in pool.ready)))
    try:
        await asyncio.wait_for(started, STARTUP_TIMEOUT_SECONDS)
    except asyncio.TimeoutError:
        _replace(pool)
        raise RewardFunctionError(f"math-verify workers did not start within {STARTUP_TIMEOUT_SECONDS:g} s") from None
    except BrokenProcessPool:
        _replace(pool)
        raise


def _slot(loop: asyncio.AbstractEventLoop) -> asyncio.Semaphore:
    with _lock:
        slot = _slots.get(loop)
        if slot is None:
            slot = _slots[loop] = asyncio.Semaphore(pool_size())
        return slot


def _current_pool() -> _Pool:
    global _pool
    with _lock:
        if _pool is None:
            size = pool_size()
            context = multiprocessing.get_context("spawn")
            executor = ProcessPoolExecutor(
                size, mp_context=context, initializer=_start_worker, initargs=(context.Barrier(size),)
            )
            # Workers spawn on demand, one per submit that finds none idle: one
            # trivial task per worker starts them all now, in parallel.
            _pool = _Pool(executor, [executor.submit(os.getpid) for _ in range(size)])
        return _pool


def _replace(pool: _Pool) -> None:
    """Retire ``pool`` (the next check starts a fresh one) and kill its workers."""
    global _pool
    with _lock:
        if _pool is pool:
            _pool = None
    # A running task cannot be cancelled in a process pool; killing the workers
    # is the only way to stop it (Python 3.14 has kill_workers() for this).
    kill_workers = getattr(pool.executor, "kill_workers", None)
    if callable(kill_workers):
        kill_workers()
        return
    for process in list((getattr(pool.executor, "_processes", None) or {}).values()):
        process.kill()
    pool.executor.shutdown(wait=False, cancel_futures=True)


__all__ = ["DEFAULT_TIMEOUT_SECONDS", "STARTUP_TIMEOUT_SECONDS", "pool_size", "verify_answer", "verify_boxed"]
