"""Provider-neutral tool defs (``vf.Tool``) and their OpenAI form."""

from __future__ import annotations

import pytest

import verifiers as vf
from verifiers.tools.schema import to_oai_tool, to_tool_def

PONG = vf.Tool(name="pong", description="Pong.", parameters={"type": "object", "properties": {}})


def test_a_tool_built_without_strict_reads_it_as_none() -> None:
    assert PONG.strict is None and "strict" not in PONG


def test_attribute_writes_set_the_field_as_on_0_3_0s_model() -> None:
    tool = vf.Tool(PONG)
    tool.strict = True
    assert tool["strict"] is True and to_oai_tool(tool)["function"]["strict"] is True
    del tool.strict
    assert "strict" not in tool and tool.strict is None
    with pytest.raises(AttributeError):
        del tool.strict


def test_a_def_and_its_openai_form_round_trip() -> None:
    assert to_tool_def(to_oai_tool(PONG)) == {**PONG, "strict": None}


@pytest.mark.parametrize("bad, error", [
    (42, TypeError),  # not a mapping
    ({"description": "no name"}, ValueError),
    ({"name": "", "parameters": {}}, ValueError),
])
def test_a_bad_tool_definition_is_refused_clearly(bad, error) -> None:
    with pytest.raises(error, match="tool definition"):
        to_oai_tool(bad)
