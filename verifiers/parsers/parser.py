"""The base parser: turns a model's completion into the text a reward compares.

A completion is either a string (completion mode) or a list of chat messages.
Messages may be plain dicts, :class:`verifiers.messages.Message` objects or
typed models with attributes, so every helper here reads them through
:func:`message_role` and :func:`message_text`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from verifiers.types import Messages

RewardFn = Callable[..., float]


def identity(text: str) -> str:
    """Return ``text`` unchanged (the default ``extract_fn``)."""
    return text


def require_str(text: object, parser_name: str) -> None:
    """Raise ``TypeError`` unless ``text`` is a str (parsers that slice text need one)."""
    if not isinstance(text, str):
        raise TypeError(f"{parser_name}.parse expects a str, got {type(text).__name__}")


def message_role(message: Any) -> str | None:
    """The ``role`` of a message given as a dict or as an object."""
    if isinstance(message, dict):
        return message.get("role")
    return getattr(message, "role", None)


def message_text(message: Any, separator: str = "\n") -> str:
    """The text content of a message; ``None`` reads as ``""``.

    Multimodal content (a list of parts) keeps its text parts, joined by
    ``separator``; other parts (images, audio) carry no text to parse.
    """
    content = message.get("content") if isinstance(message, dict) else getattr(message, "content", None)
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") == "text":
                texts.append(str(part.get("text", "")))
            elif getattr(part, "type", None) == "text":
                texts.append(str(getattr(part, "text", "")))
        return separator.join(texts)
    return str(content)


class Parser:
    """Parse model output with ``extract_fn`` (identity by default).

    >>> Parser(extract_fn=str.upper).parse_answer([{"role": "assistant", "content": "yes"}])
    'YES'

    Unknown keyword arguments become attributes, as in classic verifiers,
    where environments pass their own settings through the parser.
    """

    #: Parse the last message whatever its role, as 0.1.x did (a tuple-era MultiTurnEnv sets it on its
    #: parsers: a completion there may end with the environment's own message, and rewards saw that).
    answer_from_last_message: bool = False

    def __init__(self, extract_fn: Callable[[str], Any] = identity, **kwargs: Any) -> None:
        if not callable(extract_fn):
            raise TypeError(f"extract_fn must be callable, got {type(extract_fn).__name__}")
        self.logger = logging.getLogger(f"verifiers.parsers.{type(self).__name__}")
        self.extract_fn = extract_fn
        for key, value in kwargs.items():
            # A kwarg named like a method would silently replace it; that is a bug, not a setting.
            if hasattr(type(self), key):
                raise TypeError(f"{type(self).__name__}() got an argument {key!r} that would shadow a method")
            self.logger.debug("%s: storing extra argument %r as an attribute", type(self).__name__, key)
            setattr(self, key, value)

    def parse(self, text: str) -> Any:
        """Apply ``extract_fn`` to ``text``."""
        return self.extract_fn(text)

    def parse_answer(self, completion: Messages) -> Any:
        """Parse the final answer of a completion.

        A string is parsed whole. For a chat, the content of the last assistant
        message is parsed (the last message when there is no assistant one), so
        an environment's closing feedback message is never mistaken for the
        answer; with :attr:`answer_from_last_message`, the last message. An
        empty chat gives ``None``.
        """
        if isinstance(completion, str):
            return self.parse(completion)
        messages = list(completion)
        if not messages:
            return None
        assistant = [] if self.answer_from_last_message else self.get_assistant_messages(messages)
        candidates = assistant or messages
        return self.parse(message_text(candidates[-1]))

    def get_format_reward_func(self) -> RewardFn:
        """A reward function named ``format_reward_func``; the base parser has no format, so it gives 1.0."""

        def format_reward_func(completion: Messages = "", **kwargs: Any) -> float:
            return 1.0

        return format_reward_func

    def get_assistant_messages(self, completion: Messages) -> list[Any]:
        """The assistant messages of a chat completion, in order."""
        return _with_role(completion, "assistant")

    def get_system_messages(self, completion: Messages) -> list[Any]:
        """The system messages of a chat completion, in order."""
        return _with_role(completion, "system")

    def get_user_messages(self, completion: Messages) -> list[Any]:
        """The user messages of a chat completion, in order."""
        return _with_role(completion, "user")

    def get_tool_messages(self, completion: Messages) -> list[Any]:
        """The tool-result messages of a chat completion, in order."""
        return _with_role(completion, "tool")

    def _assistant_texts(self, completion: Messages, separator: str = "\n") -> list[str]:
        """Texts the model wrote: the whole string in completion mode, else each assistant message."""
        if isinstance(completion, str):
            return [completion]
        return [message_text(m, separator) for m in self.get_assistant_messages(completion)]


def _with_role(completion: Messages, role: str) -> list[Any]:
    if isinstance(completion, str):
        raise TypeError("expected a list of chat messages, got a string (completion mode has no roles)")
    return [m for m in completion if message_role(m) == role]
