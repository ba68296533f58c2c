"""Names public environments import from ``verifiers.types`` (both eras)."""

from __future__ import annotations

import typing

import pytest
from openai.types.chat import ChatCompletionMessageToolCall as OpenAIToolCall

import verifiers as vf
import verifiers.types as types
from verifiers.tools.schema import Tool


@pytest.mark.parametrize("name", [
    "Tool", "ChatCompletionMessageToolCall", "ChatCompletionToolParam", "FunctionDefinition", "FunctionParameters",
    "ChatCompletionRole", "JsonPrimitive", "DatasetBuilder", "Messages", "State", "ChatMessage",
])
def test_names_import_and_are_listed(name):
    assert hasattr(types, name) and name in types.__all__


def test_openai_types_are_the_openai_ones():
    assert types.ChatCompletionMessageToolCall is OpenAIToolCall
    assert typing.get_args(types.JsonPrimitive) == ("string", "number", "integer", "boolean", "array", "object")


def test_tool_is_the_sdks_tool_def():
    assert types.Tool is Tool is vf.Tool
    tool = types.Tool(name="f", description="d", parameters={"type": "object", "properties": {}})
    assert tool.name == "f" and tool["description"] == "d"


def test_dataset_builder_is_a_no_argument_callable_type():
    assert vf.DatasetBuilder is types.DatasetBuilder
    assert typing.get_origin(types.DatasetBuilder) is not None and typing.get_args(types.DatasetBuilder)[0] == []
