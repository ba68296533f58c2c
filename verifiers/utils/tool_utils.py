"""Compatibility path ``verifiers.utils.tool_utils``; the real home is :mod:`verifiers.tools.schema`."""

from verifiers.tools.schema import convert_func_to_oai_tool

__all__ = ["convert_func_to_oai_tool"]
