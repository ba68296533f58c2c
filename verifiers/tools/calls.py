"""Carrying out the model's tool calls, turning every mistake into a message the model can read.

A model may name a tool that does not exist, send arguments that are not JSON
or not an object, or miss a required argument. None of that is an SDK
failure: each becomes a :class:`~verifiers.errors.ToolParseError` whose text
is sent back as the tool message, so the model can correct itself.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Callable

from verifiers.errors import ToolParseError


def parse_tool_call(tool_call: Any, tool_map: dict[str, Callable[..., Any]]) -> tuple[str, dict[str, Any], str]:
    """``(name, arguments, id)`` of a tool call, validated against the known tools.

    Raises:
        ToolParseError: unknown tool, arguments not a JSON object.
    """
    function = tool_call.get("function") or {}
    name = function.get("name") or ""
    call_id = tool_call.get("id") or ""
    if name not in tool_map:
        available = ", ".join(sorted(tool_map)) or "none"
        raise ToolParseError(f"Error: unknown tool {name!r}. Available tools: {available}.")
    raw = function.get("arguments")
    if raw is None or raw == "":
        args: Any = {}
    elif isinstance(raw, dict):
        args = raw
    else:
        try:
            args = json.loads(raw)
        except json.JSONDecodeError as error:
            raise ToolParseError(
                f"Error: the arguments of tool {name!r} are not valid JSON ({error.msg} at position {error.pos})."
            ) from error
    if not isinstance(args, dict):
        raise ToolParseError(f"Error: the arguments of tool {name!r} must be a JSON object, got {type(args).__name__}.")
    return name, args, call_id


def check_arguments(name: str, func: Callable[..., Any], args: dict[str, Any], hidden: set[str] = frozenset()) -> None:
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


__all__ = ["parse_tool_call", "check_arguments"]
