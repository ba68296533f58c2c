"""Reading the model's tool calls: every shape accepted, every mistake a ToolParseError the model can read."""

from __future__ import annotations

import pytest
from openai.types.chat import ChatCompletionMessageToolCall

import verifiers as vf
from verifiers.errors import ToolParseError
from verifiers.tools.calls import check_hidden_arguments, parse_tool_call, read_tool_call


def add(a: int, b: int) -> int:
    return a + b


TOOLS = {"add": add}


@pytest.mark.parametrize("call", [
    vf.ToolCall(id="c1", name="add", arguments='{"a": 1, "b": 2}'),
    {"id": "c1", "name": "add", "arguments": '{"a": 1, "b": 2}'},
    {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},
    ChatCompletionMessageToolCall(id="c1", type="function", function={"name": "add", "arguments": '{"a": 1, "b": 2}'}),
], ids=["vf.ToolCall", "flat dict", "openai dict", "openai object"])
def test_every_tool_call_shape_parses(call) -> None:
    assert parse_tool_call(call, TOOLS) == ("add", {"a": 1, "b": 2}, "c1")


def test_missing_arguments_mean_none() -> None:
    assert read_tool_call({"id": "c1", "name": "add"}) == ("add", {}, "c1")


@pytest.mark.parametrize(("arguments", "says"), [
    ("{not json", "are not valid JSON"),
    ("[1, 2]", "must be a JSON object, got list"),
    ('"text"', "must be a JSON object, got str"),
])
def test_malformed_arguments_are_explained(arguments: str, says: str) -> None:
    with pytest.raises(ToolParseError, match=says):
        read_tool_call(vf.ToolCall(id="c1", name="add", arguments=arguments))


def test_an_unknown_tool_lists_the_known_ones() -> None:
    with pytest.raises(ToolParseError, match=r"unknown tool 'nope'\. Available tools: add"):
        parse_tool_call(vf.ToolCall(id="c1", name="nope", arguments="{}"), TOOLS)


def test_read_tool_call_leaves_names_to_the_caller() -> None:
    # A call_tool override may serve tools the environment's tool_map does not hold.
    assert read_tool_call(vf.ToolCall(id="c9", name="remote_search", arguments='{"q": "x"}')) == (
        "remote_search", {"q": "x"}, "c9")


def test_hidden_arguments_are_refused() -> None:
    check_hidden_arguments("open", {"label": "red"}, {"box_id"})
    with pytest.raises(ToolParseError, match="unexpected arguments: box_id"):
        check_hidden_arguments("open", {"label": "red", "box_id": "other"}, {"box_id"})
