"""One request with ``n`` replies in place of ``n`` identical requests sent at the same moment.

An RL step samples several rollouts of each prompt (a group), and the rollouts of a group
start together, so their first model calls are identical requests arriving in the same few
turns of the event loop. Served one by one, each pays the server's whole per-request cost
(HTTP, chat template, tokenisation, scheduling, detokenisation, the response) and its
prefill; merged into one request with ``n`` set, the server pays them once and samples the
``n`` replies from one prefill. On the tiny model on CPU, 64 prompts × 8 replies take
1.6 s as 64 requests with ``n = 8`` against 5.8 s as 512 requests (``docs/inference.md``,
``bench/coalesce.py``).

The replies are what the separate requests would have drawn: ``n`` independent samples of
the same distribution. A request that names a ``seed`` is never merged (``n`` seeded
replies differ, where ``n`` seeded requests repeat one reply), nor is one that asks for
more than one reply itself (``n`` > 1) or streams. A request whose body is not plain JSON goes out alone.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from verifiers.errors import MalformedModelResponseError

Send = Callable[[int], Awaitable[Any]]
"""Sends the request with ``n`` replies (``1``: exactly the request as given)."""


def merge_key(path: str, body: dict[str, Any]) -> str | None:
    """The identity of a mergeable request, or ``None`` if it must go out alone."""
    extra = body.get("extra_body") or {}
    if body.get("n", 1) != 1 or "seed" in body or body.get("stream") or (isinstance(extra, dict) and "seed" in extra):
        return None
    try:
        return json.dumps([path, {k: v for k, v in body.items() if k != "n"}], sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):  # objects, NaN: not an identity to trust
        return None


def one_reply(response: Any, index: int, of: int) -> Any:
    """``response``'s reply ``index`` as a response of its own (one choice, index 0, its own usage)."""
    choice = response.choices[index].model_copy(update={"index": 0})
    update: dict[str, Any] = {"choices": [choice]}
    usage = getattr(response, "usage", None)
    if usage is not None:
        token_ids = getattr(choice, "token_ids", None)
        completion = len(token_ids) if isinstance(token_ids, list) else usage.completion_tokens // of
        update["usage"] = usage.model_copy(
            update={"completion_tokens": completion, "total_tokens": usage.prompt_tokens + completion}
        )
    return response.model_copy(update=update)


@dataclass
class _Batch:
    send: Send
    waiters: list[asyncio.Future[Any]] = field(default_factory=list)


class RequestCoalescer:
    """Merges identical requests that arrive within ``window`` turns of the event loop.

    >>> coalescer = RequestCoalescer()
    >>> # response = await coalescer.request(key, send)  # send(n) posts the request with n replies
    """

    def __init__(self, window: int = 3) -> None:
        """``window``: event-loop turns the first request of a batch waits for identical ones (the rollouts
        of a group reach their first model call a turn or two apart)."""
        self.window = window
        self._open: dict[str, _Batch] = {}
        self._flushing: set[asyncio.Task[None]] = set()
        self.requests = 0
        """Requests sent (one per batch)."""
        self.replies = 0
        """Replies asked for over all sent requests."""

    async def request(self, key: str, send: Send) -> Any:
        """The response to one request, sent together with the identical ones that arrive with it."""
        loop = asyncio.get_running_loop()
        batch = self._open.get(key)
        if batch is None:
            batch = self._open[key] = _Batch(send)
            task = loop.create_task(self._flush(key, batch))
            self._flushing.add(task)
            task.add_done_callback(self._flushing.discard)
        waiter: asyncio.Future[Any] = loop.create_future()
        batch.waiters.append(waiter)
        return await waiter

    async def _flush(self, key: str, batch: _Batch) -> None:
        for _ in range(self.window):
            await asyncio.sleep(0)
        del self._open[key]
        waiters = [w for w in batch.waiters if not w.done()]  # a cancelled rollout needs no reply
        if not waiters:
            return
        self.requests += 1
        self.replies += len(waiters)
        try:
            replies = split_replies(await batch.send(len(waiters)), len(waiters))
        except asyncio.CancelledError:
            for waiter in waiters:
                waiter.cancel()
            raise
        except Exception as error:  # every waiter gets what a request of its own would have raised
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(error)
            return
        for waiter, reply in zip(waiters, replies):
            if not waiter.done():
                waiter.set_result(reply)


def split_replies(response: Any, n: int) -> list[Any]:
    """One response per reply of a request sent with ``n`` replies.

    Raises:
        MalformedModelResponseError: the server answered with fewer or more replies than asked (it ignores
            ``n``, as some OpenAI-compatible servers do).
    """
    if n == 1:
        return [response]
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        return [response] * n  # not a completion: each rollout's own shape check says why
    if len(choices) != n:
        raise MalformedModelResponseError(
            f"asked the model API for {n} replies to one prompt (n={n}) and got {len(choices)}: this server does not "
            "support n; turn request merging off for it"
        )
    return [one_reply(response, i, n) for i in range(n)]


__all__ = ["RequestCoalescer", "merge_key", "one_reply", "split_replies"]
