"""Chat messages: plain dicts that also read as typed objects.

Environments of the tuple era build messages as dicts (``{"role": "user", ...}``)
and index them (``msg["content"]``); the State era adds typed constructors
(``vf.UserMessage(content=...)``) and attribute access (``msg.content``).
One representation serves both: a ``dict`` subclass with attribute access,
so a message is JSON-serialisable, comparable to a plain dict, and typed.

Everything that enters a rollout is normalised with :func:`to_message`, so
OpenAI SDK objects (e.g. tool calls) never leak into state or results.
"""

from __future__ import annotations

import json
from typing import Any, Iterable


class Message(dict):
    """A chat message: a dict whose keys also read as attributes.

    >>> m = UserMessage(content="hi")
    >>> m["role"], m.content
    ('user', 'hi')
    """

    role: str

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        default_role = getattr(type(self), "_role", None)
        if default_role is not None:
            self.setdefault("role", default_role)

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            if name.startswith("__"):
                raise AttributeError(name) from None
            # Optional fields (tool_calls, name, ...) read as None, as on typed models.
            return None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def model_dump(self, **_: Any) -> dict[str, Any]:
        """Pydantic-style export, for code written against typed message models."""
        return to_plain(self)


class SystemMessage(Message):
    _role = "system"


class UserMessage(Message):
    _role = "user"


class AssistantMessage(Message):
    _role = "assistant"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # State-era envs build these with flat vf.ToolCall / dict calls; keep one readable shape.
        if self.get("tool_calls"):
            self["tool_calls"] = [to_tool_call(call) for call in self["tool_calls"]]


class ToolMessage(Message):
    _role = "tool"


class TextMessage(Message):
    """A completion-mode chunk of text, for symmetry with the chat types."""

    _role = "text"


class FunctionCall(Message):
    """The ``function`` of a tool call: ``name`` and ``arguments`` (a JSON string)."""


# The State era's flat fields; they live inside ``function``, where the API expects them.
_FLAT_FIELDS = ("name", "arguments")
_TOOL_CALL_FIELDS = ("id", "type", "function", *_FLAT_FIELDS)


class ToolCall(Message):
    """An assistant's tool call, stored as the API sends it:
    ``{"id", "type": "function", "function": {"name", "arguments"}}``.

    It reads in both eras' shapes: ``call.function.name`` / ``call["function"]["arguments"]``
    (0.1.x, OpenAI objects) and ``call.name`` / ``call["arguments"]`` (0.3.0's flat ``vf.ToolCall``).
    It can be built from either too: ``ToolCall(id="c1", name="add", arguments='{"a": 1}')``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        data = dict(*args, **kwargs)
        function = dict(data.pop("function", None) or {})
        for key in _FLAT_FIELDS:
            if key in data:
                function[key] = data.pop(key)
        data["id"] = data.get("id") or ""
        data["type"] = data.get("type") or "function"
        data["function"] = FunctionCall(name=function.get("name") or "",
                                        arguments=_arguments_text(function.get("arguments")))
        super().__init__(data)

    @property
    def name(self) -> str:
        return self["function"]["name"]

    @property
    def arguments(self) -> str:
        return self["function"]["arguments"]

    def __missing__(self, key: str) -> Any:
        if key in _FLAT_FIELDS:
            return self["function"][key]
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self or key in _FLAT_FIELDS else default

    def __setitem__(self, key: str, value: Any) -> None:
        # A flat field written by State-era code must land where the API reads it.
        if key in _FLAT_FIELDS:
            self["function"][key] = _arguments_text(value) if key == "arguments" else value
        elif key == "function" and not isinstance(value, FunctionCall):
            super().__setitem__(key, FunctionCall(value or {}))
        else:
            super().__setitem__(key, value)


def _arguments_text(arguments: Any) -> str:
    """Tool-call arguments as the API carries them: a JSON string (an empty one when absent)."""
    if arguments is None:
        return ""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


_BY_ROLE: dict[str, type[Message]] = {
    "system": SystemMessage,
    "developer": SystemMessage,
    "user": UserMessage,
    "assistant": AssistantMessage,
    "tool": ToolMessage,
}


def to_plain(value: Any) -> Any:
    """Deep-convert SDK objects (pydantic models, OpenAI types, Messages) to plain JSON data."""
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return to_plain(dump(exclude_none=True))
    return value


def to_tool_call(raw: Any) -> ToolCall:
    """Normalise a tool call (OpenAI object, OpenAI dict, or 0.3.0's flat ``{id, name, arguments}``)."""
    if isinstance(raw, ToolCall):
        return raw
    data = to_plain(raw)
    if not isinstance(data, dict):
        raise TypeError(f"a tool call must be a mapping, got {type(raw).__name__}")
    # Only the fields the API defines: a provider's extras must not be sent back on the next turn.
    return ToolCall({k: v for k, v in data.items() if k in _TOOL_CALL_FIELDS})


def to_message(raw: Any) -> Message:
    """Normalise any message form (dict, typed model, OpenAI object) into a :class:`Message`."""
    if isinstance(raw, Message) and not raw.get("tool_calls"):
        return raw
    data = to_plain(raw)
    if not isinstance(data, dict):
        raise TypeError(f"a chat message must be a mapping, got {type(raw).__name__}")
    if data.get("tool_calls"):
        data["tool_calls"] = [to_tool_call(tc) for tc in data["tool_calls"]]
    cls = _BY_ROLE.get(str(data.get("role")), Message)
    return cls(data)


def to_messages(raw: Iterable[Any]) -> list[Message]:
    """Normalise a list of messages; see :func:`to_message`."""
    return [to_message(m) for m in raw]


__all__ = [
    "Message",
    "SystemMessage",
    "UserMessage",
    "AssistantMessage",
    "ToolMessage",
    "TextMessage",
    "ToolCall",
    "FunctionCall",
    "to_message",
    "to_messages",
    "to_plain",
    "to_tool_call",
]
