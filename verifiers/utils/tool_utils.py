"""Compatibility path ``verifiers.utils.tool_utils``; the real home is :mod:`verifiers.tools.schema`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from verifiers.tools.schema import Tool, convert_func_to_oai_tool, to_tool_def


def convert_func_to_tool_def(func: Callable[..., Any]) -> Tool:
    """The provider-neutral :class:`~verifiers.tools.schema.Tool` def of ``func`` (0.3.0's helper).

    The same schema as :func:`convert_func_to_oai_tool`, as ``name``/``description``/``parameters``/``strict``.
    """
    return to_tool_def(convert_func_to_oai_tool(func))


__all__ = ["convert_func_to_oai_tool", "convert_func_to_tool_def"]
