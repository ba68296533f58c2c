"""Calling a reward function under a deadline, off the event loop.

Why: one reward function that never returned used to hang a whole ``vf-eval`` run, and a slow synchronous one
stalled every other rollout, since it ran on the event loop. Here an async function is cancelled at its
deadline, and a synchronous one runs on a worker thread that the loop awaits with the same deadline. A thread
cannot be killed, so a hung one is left behind (a daemon thread: it never holds up the process's exit) and a new
worker takes its place; the call is scored 0.0 and counted like any reward function that raises.

Compatibility: code that installs signal handlers works on the main thread only, and math_verify's own parsing
and comparison timeouts do exactly that (with its defaults). Such a function is noticed the first time it calls
``signal.signal`` on a worker — its result there is discarded, whatever it caught — and it is rerun on the
loop's thread, where every later call of it goes, as classic verifiers called every function: it keeps its own
timeouts and scores what it scores there, but the deadline cannot interrupt it.

>>> import asyncio
>>> asyncio.run(call_reward(lambda completion: len(completion), {"completion": "abc"}, timeout_s=5.0))
3
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import queue
import signal
import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from verifiers.errors import RewardFunctionError
from verifiers.rubrics.injection import func_name, select_arguments

#: Seconds one reward function may take for one rollout (a group function: for its group) by default.
DEFAULT_SCORING_TIMEOUT_S = 300.0


class ScoringTimeoutError(RewardFunctionError):
    """A reward function did not finish within the rubric's ``scoring_timeout``."""


async def call_reward(func: Callable[..., Any], available: Mapping[str, Any], timeout_s: float | None) -> Any:
    """Call ``func`` with the arguments it asks for and return its (awaited) result.

    Raises :class:`ScoringTimeoutError` when it takes longer than ``timeout_s`` seconds (``None``: no deadline).
    """
    kwargs = select_arguments(func, available)
    loop = asyncio.get_running_loop()
    start = loop.time()
    if inspect.iscoroutinefunction(func) or _runs_on_loop_thread(func):
        result = func(**kwargs)
    else:
        job = _WORKERS.submit(func, kwargs)
        try:
            outcome = await _bounded(func, asyncio.wrap_future(job.future), timeout_s, timeout_s)
        except (ScoringTimeoutError, asyncio.CancelledError):
            _WORKERS.abandon(job)
            raise
        if outcome.used_signals:
            _remember_loop_thread(func)
            result = func(**kwargs)
        else:
            result = outcome.value
    if inspect.isawaitable(result):
        left = None if timeout_s is None else max(timeout_s - (loop.time() - start), 0.0)
        result = await _bounded(func, result, left, timeout_s)
    return result


async def _bounded(
    func: Callable[..., Any], awaitable: Awaitable[Any], left_s: float | None, timeout_s: float | None
) -> Any:
    try:
        return await asyncio.wait_for(awaitable, left_s)
    except asyncio.TimeoutError:
        raise ScoringTimeoutError(
            f"reward function {func_name(func)!r} did not finish within {timeout_s:g} s (the rubric's "
            "scoring_timeout; vf-eval --scoring-timeout)"
        ) from None


# ------------------------------------------------------------ functions that need the main thread

_loop_thread_funcs: weakref.WeakSet[Any] = weakref.WeakSet()


def _identity(func: Callable[..., Any]) -> Any:
    return getattr(func, "__func__", func)  # a bound method is a new object at every attribute access


def _runs_on_loop_thread(func: Callable[..., Any]) -> bool:
    try:
        return _identity(func) in _loop_thread_funcs
    except TypeError:  # not weak-referenceable: it is tried on a worker every time
        return False


def _remember_loop_thread(func: Callable[..., Any]) -> None:
    try:
        _loop_thread_funcs.add(_identity(func))
    except TypeError:
        pass


_flags = threading.local()
_original_signal = signal.signal


def _watched_signal(signalnum: Any, handler: Any) -> Any:
    """``signal.signal`` as it was, noting a call made from a reward worker (it raises there: not the main
    thread) so that the call's result is not trusted whatever the function made of the error."""
    if getattr(_flags, "in_reward_worker", False):
        _flags.used_signals = True
    return _original_signal(signalnum, handler)


# ------------------------------------------------------------------------------- worker threads


@dataclass
class _Outcome:
    value: Any = None
    used_signals: bool = False


@dataclass
class _Job:
    func: Callable[..., Any]
    kwargs: dict[str, Any]
    future: concurrent.futures.Future[_Outcome] = field(default_factory=concurrent.futures.Future)
    context: contextvars.Context = field(default_factory=contextvars.copy_context)
    started: bool = False
    finished: bool = False
    abandoned: bool = False


class _Workers:
    """Daemon threads that run synchronous reward functions: ``size`` of them for calls that return, and one
    more for each call that overran its deadline and still holds its thread (``limit`` threads in all; past it,
    calls wait their turn, and their deadline still applies)."""

    def __init__(self, size: int = 32, limit: int = 256) -> None:
        self._size, self._limit = size, limit
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads = 0
        self._stuck = 0

    @property
    def stuck(self) -> int:
        """Threads still running a call whose deadline passed."""
        return self._stuck

    def submit(self, func: Callable[..., Any], kwargs: dict[str, Any]) -> _Job:
        _install_signal_watch()
        job = _Job(func, kwargs)
        self._jobs.put(job)
        if not self._idle.acquire(blocking=False):
            with self._lock:
                if self._threads - self._stuck < self._size and self._threads < self._limit:
                    self._threads += 1
                    threading.Thread(target=self._work, name="reward-worker", daemon=True).start()
        return job

    def abandon(self, job: _Job) -> None:
        """The caller stopped waiting: a job not started never runs, one running no longer counts as a worker."""
        job.future.cancel()
        with self._lock:
            if job.started and not job.finished:
                job.abandoned = True
                self._stuck += 1

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            with self._lock:
                run = job.future.set_running_or_notify_cancel()
                job.started = run
            if run:
                job.context.run(_run, job)
            with self._lock:
                job.finished = True
                if job.abandoned:
                    self._stuck -= 1
            self._idle.release()


def _run(job: _Job) -> None:
    _flags.in_reward_worker, _flags.used_signals = True, False
    try:
        value = job.func(**job.kwargs)
    except BaseException as exc:  # handed to the awaiting coroutine, which records or re-raises it
        error: BaseException | None = exc
    else:
        error = None
    finally:
        used_signals = _flags.used_signals
        _flags.in_reward_worker = _flags.used_signals = False
    if used_signals:
        job.future.set_result(_Outcome(used_signals=True))
    elif error is not None:
        job.future.set_exception(error)
    else:
        job.future.set_result(_Outcome(value))


_WORKERS = _Workers()
_watch_lock = threading.Lock()


def _install_signal_watch() -> None:
    """Wrap ``signal.signal`` once, the first time a reward function goes to a worker."""
    with _watch_lock:
        if signal.signal is not _watched_signal:
            signal.signal = _watched_signal


__all__ = ["DEFAULT_SCORING_TIMEOUT_S", "ScoringTimeoutError", "call_reward"]
