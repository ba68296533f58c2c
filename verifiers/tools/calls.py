"""Carrying out the model's tool calls, turning every mistake into a message the model can read.

A model may name a tool that does not exist, send arguments that are not JSON
or not an object, or miss a required argument. None of that is an SDK
failure: each becomes a :class:`~verifiers.errors.ToolParseError` whose text
is sent back as the tool message, so the model can correct itself.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Set
from typing import Any

from verifiers.errors import ToolParseError
from verifiers.messages import to_tool_call


def read_tool_call(tool_call: Any) -> tuple[str, dict[str, Any], str]:
    """``(name, arguments, id)`` of a tool call in any shape: a :class:`~verifiers.messages.ToolCall`,
    an OpenAI object or dict, or 0.3.0's flat ``{"id", "name", "arguments"}``.

    Raises:
        ToolParseError: the arguments are not a JSON object.
    """
    call = to_tool_call(tool_call)
    name, raw = call.name, call.arguments
    if raw == "":
        return name, {}, call.id
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ToolParseError(
            f"Error: the arguments of tool {name!r} are not valid JSON ({error.msg} at position {error.pos})."
        ) from error
    if not isinstance(args, dict):
        raise ToolParseError(f"Error: the arguments of tool {name!r} must be a JSON object, got {type(args).__name__}.")
    return name, args, call.id


def parse_tool_call(tool_call: Any, tool_map: Mapping[str, Callable[..., Any]]) -> tuple[str, dict[str, Any], str]:
    """:func:`read_tool_call`, and the tool must be one of ``tool_map``'s.

    Raises:
        ToolParseError: unknown tool, arguments not a JSON object.
    """
    name, args, call_id = read_tool_call(tool_call)
    if name not in tool_map:
        raise unknown_tool(name, tool_map)
    return name, args, call_id


def unknown_tool(name: str, tool_map: Mapping[str, Any]) -> ToolParseError:
    available = ", ".join(sorted(tool_map)) or "none"
    return ToolParseError(f"Error: unknown tool {name!r}. Available tools: {available}.")


def check_hidden_arguments(name: str, args: dict[str, Any], hidden: Set[str]) -> None:
    """Refuse arguments the environment fills in itself: the model must not choose them."""
    passed = sorted(set(args) & hidden)
    if passed:
        raise ToolParseError(f"Error: tool {name!r} got unexpected arguments: {', '.join(passed)}.")


def check_arguments(name: str, func: Callable[..., Any], args: dict[str, Any], hidden: Set[str] = frozenset()) -> None:
    """Raise :class:`ToolParseError` when ``args`` cannot be bound to ``func``'s visible parameters."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return  # builtins without a signature: let the call itself decide
    params = signature.parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    unknown = [k for k in args if k not in params or k in hidden]
    if unknown and not takes_any:
        raise ToolParseError(f"Error: tool {name!r} got unexpected arguments: {', '.join(sorted(unknown))}.")
    missing = [
        p.name for p in params.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and p.name not in args and p.name not in hidden and p.name not in ("self", "cls")
    ]
    if missing:
        raise ToolParseError(f"Error: tool {name!r} is missing required arguments: {', '.join(missing)}.")


__all__ = ["read_tool_call", "parse_tool_call", "unknown_tool", "check_arguments", "check_hidden_arguments"]
