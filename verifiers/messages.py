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
from collections.abc import Iterable
from typing import Any


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


class WriteThroughDict(dict):
    """A dict whose every write goes through ``__setitem__``.

    ``dict.update``, ``setdefault``, ``pop`` and ``|=`` write the storage directly, so a
    subclass that routes or converts values in ``__setitem__`` would be bypassed by them.
    ``_is_unset`` says which present values ``setdefault`` may still fill in.
    """

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self or self._is_unset(key):
            self[key] = default
        return self[key]

    def pop(self, key: Any, *default: Any) -> Any:
        if key not in self:
            if default:
                return default[0]
            raise KeyError(key)
        value = self[key]
        del self[key]
        return value

    # mypy wants |= to take no more than | does, but dict's own |= takes any mapping or pairs where | takes a
    # dict; typeshed's list.__iadd__ carries the same ignore for the same check
    def __ior__(self, other: Any) -> Any:  # type: ignore[misc]
        self.update(other)
        return self

    def _is_unset(self, key: Any) -> bool:
        return False


class FunctionCall(WriteThroughDict, Message):
    """The ``function`` of a tool call: ``name`` and ``arguments`` (a JSON string), always both."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        data = dict(*args, **kwargs)
        data["name"] = data.get("name") or ""
        data["arguments"] = _arguments_text(data.get("arguments"))
        super().__init__(data)

    def __setitem__(self, key: str, value: Any) -> None:
        # The API takes arguments as JSON text only; an object written here is encoded once, now.
        super().__setitem__(key, _arguments_text(value) if key == "arguments" else value)

    def _is_unset(self, key: Any) -> bool:
        # "" is what a call built without a name or arguments holds: setdefault may fill it.
        return key in _FLAT_FIELDS and self.get(key) == ""

    def __copy__(self) -> FunctionCall:
        return FunctionCall(self)

    copy = __copy__  # dict.copy would return a plain dict

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt through __init__, so a copy or an unpickled call holds the same normalised shape.
        return (type(self), (dict(self),))


# The State era's flat fields; they live inside ``function``, where the API expects them.
_FLAT_FIELDS = ("name", "arguments")
_TOOL_CALL_FIELDS = ("id", "type", "function", *_FLAT_FIELDS)


class ToolCall(WriteThroughDict, Message):
    """An assistant's tool call, stored as the API sends it:
    ``{"id", "type": "function", "function": {"name", "arguments"}}``.

    It reads in both eras' shapes: ``call.function.name`` / ``call["function"]["arguments"]``
    (0.1.x, OpenAI objects) and ``call.name`` / ``call["arguments"]`` (0.3.0's flat ``vf.ToolCall``).
    It can be built from either too: ``ToolCall(id="c1", name="add", arguments='{"a": 1}')``.
    Every write of a flat field (item, attribute, ``update``, ``setdefault``, ``pop``) lands in
    ``function``, so the stored (and serialised) form never holds top-level ``name``/``arguments``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        data = dict(*args, **kwargs)
        function = _function_fields(data.pop("function", None))
        function.update({key: data.pop(key) for key in _FLAT_FIELDS if key in data})
        data["id"] = data.get("id") or ""
        data["type"] = data.get("type") or "function"
        data["function"] = FunctionCall(function)
        super().__init__(data)

    @property
    def name(self) -> str:
        return self["function"]["name"]

    @property
    def arguments(self) -> str:
        return self["function"]["arguments"]

    def __missing__(self, key: str) -> Any:
        if key in _FLAT_FIELDS:
            return self._function()[key]
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        # The flat fields always read (from ``function``), so they are "in" the call too.
        return key in _FLAT_FIELDS or super().__contains__(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def __setitem__(self, key: str, value: Any) -> None:
        # A flat field written by State-era code must land where the API reads it.
        if key in _FLAT_FIELDS:
            self._function()[key] = value
        elif key == "function":
            super().__setitem__(key, FunctionCall(_function_fields(value)))
        else:
            super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        # A flat field cannot leave ``function`` (the API requires both): deleting one empties it.
        if key in _FLAT_FIELDS:
            self._function()[key] = ""
        else:
            super().__delitem__(key)

    def _is_unset(self, key: Any) -> bool:
        return key in _FLAT_FIELDS and self._function()._is_unset(key)

    def _function(self) -> FunctionCall:
        # Unpickling an old or hand-made state may set a flat field before ``function``.
        if not super().__contains__("function"):
            super().__setitem__("function", FunctionCall())
        return dict.__getitem__(self, "function")

    def __copy__(self) -> ToolCall:
        return ToolCall(self)  # a new ``function`` too: a flat write on the copy must not reach the original

    copy = __copy__

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))


def _function_fields(function: Any) -> dict[str, Any]:
    """A tool call's ``function`` as a plain dict (an OpenAI object is read as its fields)."""
    plain = to_plain(function) if function is not None else {}
    if not isinstance(plain, dict):
        raise TypeError(f"a tool call's function must be a mapping, got {type(function).__name__}")
    return dict(plain)


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
