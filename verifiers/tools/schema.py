"""OpenAI tool schemas from plain Python functions.

The function's name is the tool's name, its docstring's summary the
description, and its type hints (with ``Args:`` descriptions from a Google- or
reST-style docstring) the JSON schema of its parameters::

    def add(a: int, b: int = 0) -> int:
        \"\"\"Add two numbers.

        Args:
            a: the first number.
            b: the second number.
        \"\"\"

    convert_func_to_oai_tool(add)["function"]["parameters"]["required"] == ["a"]
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any, get_type_hints

from pydantic import TypeAdapter
from pydantic_core import PydanticSerializationError

_ARG_LINE = re.compile(r"^\s*(?::param\s+)?\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$")
_OTHER_SECTION = re.compile(r"^\s*(Returns?|Raises|Yields|Examples?|Notes?)\s*:\s*$")


def _docstring_parts(func: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    doc = inspect.getdoc(func) or ""
    lines = doc.splitlines()
    summary_lines: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line) or _OTHER_SECTION.match(line):
            break
        summary_lines.append(line.strip())
    descriptions: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for line in lines:
        if _SECTION.match(line):
            in_args, current = True, None
            continue
        if _OTHER_SECTION.match(line):
            in_args = False
            continue
        match = _ARG_LINE.match(line) if (in_args or line.strip().startswith(":param")) else None
        if match:
            current = match.group(1)
            descriptions[current] = match.group(2).strip()
        elif in_args and current and line.strip():
            descriptions[current] = f"{descriptions[current]} {line.strip()}".strip()
    return " ".join(summary_lines), descriptions


def _param_schema(annotation: Any) -> dict[str, Any]:
    if annotation is inspect.Parameter.empty:
        return {}
    schema = TypeAdapter(annotation).json_schema()
    schema.pop("title", None)
    return schema


class Tool(dict):
    """A provider-neutral tool definition (the State era's ``vf.Tool``): ``name``,
    ``description``, ``parameters``, ``strict``; readable as keys or attributes."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            if name == "strict":  # optional in 0.3.0's model, where it defaults to None
                return None
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        # 0.3.0's vf.Tool is a model: ``tool.strict = True`` sets the field, not a Python attribute.
        self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None


def to_tool_def(tool: Any) -> Tool:
    """A :class:`Tool` from an OpenAI ``{"type": "function", "function": {...}}`` schema or a tool def."""
    tool = _mapping(tool)
    function = tool.get("function", tool)
    return Tool(name=function.get("name", ""), description=function.get("description", ""),
                parameters=function.get("parameters", {}), strict=function.get("strict"))


def to_oai_tool(tool: Any) -> dict[str, Any]:
    """The OpenAI schema of a tool def (OpenAI schemas pass through unchanged)."""
    tool = _mapping(tool)
    if tool.get("type") == "function" and "function" in tool:
        return tool
    if not tool.get("name"):
        raise ValueError(f"a tool definition needs a name, got {tool!r}")
    function = {"name": tool["name"], "description": tool.get("description", ""),
                "parameters": tool.get("parameters", {"type": "object", "properties": {}})}
    if tool.get("strict") is not None:
        function["strict"] = tool["strict"]
    return {"type": "function", "function": function}


def _mapping(tool: Any) -> dict[str, Any]:
    """A tool given as a model object (e.g. pydantic) read as its fields."""
    if isinstance(tool, dict):
        return tool
    dump = getattr(tool, "model_dump", None)
    if not callable(dump):
        raise TypeError(f"a tool definition must be a mapping, got {type(tool).__name__}")
    return dump(exclude_none=True)


def convert_func_to_oai_tool(func: Callable[..., Any]) -> dict[str, Any]:
    """The OpenAI ``{"type": "function", "function": {...}}`` schema of ``func``."""
    if not callable(func):
        raise TypeError(f"a tool must be a callable, got {type(func).__name__}")
    summary, arg_docs = _docstring_parts(func)
    try:
        hints = get_type_hints(func)
    except (NameError, TypeError):  # unresolvable forward references: fall back to the raw annotations
        hints = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in inspect.signature(func).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or name in ("self", "cls"):
            continue
        schema = _param_schema(hints.get(name, param.annotation))
        if name in arg_docs:
            schema["description"] = arg_docs[name]
        if param.default is not inspect.Parameter.empty:
            try:
                TypeAdapter(Any).dump_json(param.default)
                schema["default"] = param.default
            except PydanticSerializationError:  # a default that is not JSON is simply not advertised
                pass
        else:
            required.append(name)
        properties[name] = schema
    parameters = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return {
        "type": "function",
        "function": {"name": func.__name__, "description": summary, "parameters": parameters},
    }


__all__ = ["Tool", "convert_func_to_oai_tool", "to_oai_tool", "to_tool_def"]
