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


class ToolMessage(Message):
    _role = "tool"


class TextMessage(Message):
    """A completion-mode chunk of text, for symmetry with the chat types."""

    _role = "text"


class ToolCall(Message):
    """An assistant's tool call: ``{"id", "type": "function", "function": {"name", "arguments"}}``."""


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
    """Normalise an OpenAI tool-call object or dict into a plain :class:`ToolCall`."""
    data = to_plain(raw)
    fn = data.get("function") or {}
    args = fn.get("arguments", "")
    if not isinstance(args, str):
        import json

        args = json.dumps(args)
    return ToolCall(
        id=data.get("id") or "",
        type=data.get("type") or "function",
        function={"name": fn.get("name") or "", "arguments": args},
    )


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
    "to_message",
    "to_messages",
    "to_plain",
    "to_tool_call",
]
