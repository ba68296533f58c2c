"""Calling code that may be sync or async, as environment hooks and reward functions are."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


async def maybe_await(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``func`` and await the result if it is awaitable.

    >>> import asyncio
    >>> asyncio.run(maybe_await(lambda x: x + 1, 1))
    2
    """
    result = func(*args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


__all__ = ["maybe_await"]
