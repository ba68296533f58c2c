"""The tuple era's call shapes, turned into the core's.

``rollout(client, model, prompt, answer, task, info, sampling_args)`` becomes the State era's
``rollout(input, client, model, sampling_args)``; a user's ``rollout`` override of that shape is called so
by the engine; ``get_model_response(client, model, prompt, ...)`` answers an overlong prompt as 0.1.x did;
and an ``env_response`` that answers ``(messages, state)`` (read from its source when it can be, or from
the value, for a class whose source cannot be read) hands its messages to the loop and its state, when
it is a new one, into the rollout's.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from openai.types.chat import ChatCompletion

from verifiers.errors import OverlongPromptError
from verifiers.rollout.era import user_override
from verifiers.rollout.model_call import request_model
from verifiers.state import State

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


def overrides_tuple_rollout(cls: type) -> bool:
    """Whether a user's class overrides ``rollout`` in 0.1.x's shape, ``rollout(self, client, model, prompt, ...)``."""
    override = user_override(cls, "rollout")
    if override is None:
        return False
    names = [p for p in inspect.signature(override).parameters if p != "self"]
    return names[:1] == ["client"]


async def run_tuple_rollout(env: Any, row: dict[str, Any], client: Any, model: str,
                            sampling_args: dict[str, Any] | None) -> State:
    """One dataset row through a user's 0.1.x-shaped ``rollout`` override; its ``(completion, state)`` become a
    full State (the row's fields under whatever the override's state holds), marked completed."""
    completion, state = await env.rollout(client, model, row["prompt"], row.get("answer", ""),
                                          row.get("task", "default"), row.get("info") or {}, sampling_args)
    full = State.new(prompt=row["prompt"], answer=row.get("answer", ""), task=row.get("task", "default"),
                     info=row.get("info"), example_id=row.get("example_id", 0), model=model)
    full.update(state)
    full["completion"] = completion
    full["is_completed"] = True
    return full


async def tuple_model_response(env: Any, client: Any, model: str, prompt: Any, oai_tools: list[Any] | None = None,
                               sampling_args: dict[str, Any] | None = None, message_type: str | None = None,
                               **_: Any) -> Any:
    """0.1.x's ``get_model_response(client, model, prompt, ...)``: an overlong prompt is answered with a dummy
    response whose id is ``"overlong-prompt"`` (the State era raises :class:`OverlongPromptError`)."""
    try:
        return await request_model(client, model, prompt, tools=oai_tools, sampling_args=sampling_args,
                                   message_type=message_type or env.message_type, retry=env.retry)
    except OverlongPromptError:
        return ChatCompletion(id="overlong-prompt", choices=[], created=0, model=model, object="chat.completion")


__all__ = [
    "is_tuple_rollout_call", "overrides_tuple_rollout", "reply_messages", "run_tuple_rollout", "tuple_model_response",
    "tuple_rollout",
]
