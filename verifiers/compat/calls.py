"""The tuple era's call shapes, turned into the core's.

``rollout(client, model, prompt, answer, task, info, sampling_args)`` becomes the State era's
``rollout(input, client, model, sampling_args)``, and an ``env_response`` that answers ``(messages,
state)`` (read from its source when it can be, or from the value, for a class whose source cannot be
read) hands its messages to the loop and its state, when it is a new one, into the rollout's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

StateRollout = Callable[[dict[str, Any], Any, str, "dict[str, Any] | None"], Awaitable[MutableMapping[str, Any]]]


def is_tuple_rollout_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``rollout`` was called as 0.1.x did: a client first, or the prompt by keyword."""
    first = args[0] if args else None
    return hasattr(first, "chat") or hasattr(first, "completions") or "prompt" in kwargs


async def tuple_rollout(state_rollout: StateRollout, client: Any, model: str, prompt: Any, answer: str = "",
                        task: str = "default", info: dict[str, Any] | None = None,
                        sampling_args: dict[str, Any] | None = None, **kwargs: Any) -> tuple[Any, Any]:
    """One rollout run through the State era's ``state_rollout``; 0.1.x's ``(completion, state)``."""
    row = {"prompt": prompt, "answer": answer, "task": task, "info": info or {},
           "example_id": kwargs.get("example_id", 0)}
    state = await state_rollout(row, client, model, sampling_args)
    return state["completion"], state


def reply_messages(result: Any, state: MutableMapping[str, Any]) -> Any:
    """The messages of ``env_response``'s result; a tuple-era ``(messages, state)`` also updates ``state``."""
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict):
        messages, new_state = result
        if new_state is not state:
            state.update(new_state)
        return messages
    return result


__all__ = ["is_tuple_rollout_call", "reply_messages", "tuple_rollout"]
