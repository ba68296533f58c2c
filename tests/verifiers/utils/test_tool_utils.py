"""``verifiers.utils.tool_utils``: the classic import path of the tool-schema helpers."""

from __future__ import annotations

import pytest

from verifiers.tools.schema import Tool, convert_func_to_oai_tool
from verifiers.utils import tool_utils


def lookup(city: str, days: int = 3) -> str:
    """Weather for a city.

    Args:
        city: the city name.
        days: how many days.
    """
    return city


def test_convert_func_to_tool_def_is_the_oai_schema_as_a_tool_def():
    tool = tool_utils.convert_func_to_tool_def(lookup)
    function = convert_func_to_oai_tool(lookup)["function"]
    assert isinstance(tool, Tool)
    assert (tool.name, tool.description, tool.parameters) == ("lookup", "Weather for a city.", function["parameters"])
    assert tool.parameters["properties"]["city"]["description"] == "the city name."


def test_reexports_the_real_home():
    assert tool_utils.convert_func_to_oai_tool is convert_func_to_oai_tool


def test_a_non_callable_is_a_clear_error():
    with pytest.raises(TypeError, match="must be a callable"):
        tool_utils.convert_func_to_tool_def("lookup")
