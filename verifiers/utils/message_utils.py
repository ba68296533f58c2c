"""Compatibility path ``verifiers.utils.message_utils``; the real home is :mod:`verifiers.messages`."""

from typing import Any

from verifiers.messages import to_message, to_messages, to_plain


def sanitize_tool_calls(messages: Any) -> Any:
    """Messages with tool calls as plain JSON-serialisable dicts (what the original's helper did)."""
    return to_plain(to_messages(messages)) if isinstance(messages, list) else messages


def cleanup_messages(messages: Any) -> Any:
    """Messages normalised to plain dicts, None-valued fields dropped."""
    if not isinstance(messages, list):
        return messages
    return [{k: v for k, v in to_plain(to_message(m)).items() if v is not None} for m in messages]


__all__ = ["sanitize_tool_calls", "cleanup_messages", "to_message", "to_messages", "to_plain"]
