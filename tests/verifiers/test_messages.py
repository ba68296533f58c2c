"""Tool calls read in both eras' shapes and always serialise in the API's shape."""

from __future__ import annotations

import copy
import json
import pickle

import pytest
from openai.types.chat import ChatCompletionMessageToolCall

import verifiers as vf
from verifiers.messages import FunctionCall, ToolCall, to_message, to_tool_call

WIRE = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}


def test_a_flat_state_era_tool_call_is_stored_in_the_api_shape() -> None:
    call = vf.ToolCall(id="c1", name="add", arguments='{"a": 1}')
    assert call == WIRE
    assert json.loads(json.dumps(call)) == WIRE


def test_a_tool_call_reads_as_0_3_0_flat_fields_and_as_0_1_openai_objects() -> None:
    call = to_tool_call(WIRE)
    assert (call.id, call.name, call.arguments) == ("c1", "add", '{"a": 1}')  # 0.3.0 vf.ToolCall
    assert (call["name"], call.get("arguments")) == ("add", '{"a": 1}')
    assert (call.function.name, call.function.arguments, call.type) == ("add", '{"a": 1}', "function")  # 0.1.x
    assert call["function"]["name"] == "add"
    assert call.get("missing", "default") == "default"
    assert "name" in call and "arguments" in call  # readable, so "in" agrees with call["name"]
    assert list(call) == ["id", "type", "function"]  # yet views, never extra keys sent to the API


def test_openai_objects_and_flat_dicts_normalise_to_the_same_call() -> None:
    openai_call = ChatCompletionMessageToolCall(id="c1", type="function",
                                                function={"name": "add", "arguments": '{"a": 1}'})
    flat = {"id": "c1", "name": "add", "arguments": {"a": 1}}  # arguments as an object: JSON-encoded
    assert to_tool_call(openai_call) == to_tool_call(flat) == WIRE
    assert isinstance(to_tool_call(flat).function, FunctionCall)


def test_provider_extras_are_not_sent_back() -> None:
    assert to_tool_call({**WIRE, "index": 0}) == WIRE


def test_writing_a_flat_field_updates_the_nested_one() -> None:
    call = to_tool_call(WIRE)
    call.name = "sub"
    call["arguments"] = {"b": 2}
    assert call == {"id": "c1", "type": "function", "function": {"name": "sub", "arguments": '{"b": 2}'}}
    call["function"] = {"name": "mul", "arguments": "{}"}
    assert call.function.name == "mul"


def test_assistant_messages_hold_readable_tool_calls_however_built() -> None:
    built = vf.AssistantMessage(content="", tool_calls=[{"id": "c1", "name": "add", "arguments": '{"a": 1}'}])
    parsed = to_message({"role": "assistant", "content": "", "tool_calls": [WIRE]})
    for message in (built, parsed):
        assert isinstance(message.tool_calls[0], ToolCall)
        assert message.tool_calls[0].name == "add" == message.tool_calls[0].function.name
    assert json.loads(json.dumps(built)) == json.loads(json.dumps(parsed))


def test_tool_calls_survive_copy_and_pickle() -> None:
    call = to_tool_call(WIRE)
    for clone in (copy.deepcopy(call), pickle.loads(pickle.dumps(call))):
        assert clone == WIRE and clone.name == "add" and clone.function.arguments == '{"a": 1}'


def test_every_write_path_keeps_flat_fields_inside_function() -> None:
    call = to_tool_call(WIRE)
    call.update(name="sub", arguments={"b": 2})
    call |= {"id": "c2"}
    assert json.loads(json.dumps(call)) == {"id": "c2", "type": "function",
                                            "function": {"name": "sub", "arguments": '{"b": 2}'}}
    assert call.setdefault("name", "ignored") == "sub"  # set already: kept
    assert call.pop("arguments") == '{"b": 2}' and call.arguments == ""  # the API needs the key: emptied
    del call["name"]
    assert list(call) == ["id", "type", "function"] and call.function == {"name": "", "arguments": ""}
    assert call.pop("missing", None) is None


def test_setdefault_fills_what_a_call_was_built_without() -> None:
    call = vf.ToolCall(id="c1")
    assert call.setdefault("arguments", "{}") == "{}" and call.setdefault("name", "add") == "add"
    assert call == {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
    call.function.setdefault("arguments", {"ignored": 1})
    call.function.arguments = {"a": 1}  # a nested write is encoded as the API carries it too
    assert call.arguments == '{"a": 1}'


def test_copies_read_as_the_original_and_are_independent() -> None:
    call = vf.ToolCall(id="c1", name="add", arguments={"a": 1})
    for clone in (copy.copy(call), call.copy(), copy.deepcopy(call), pickle.loads(pickle.dumps(call))):
        assert type(clone) is ToolCall and type(clone.function) is FunctionCall
        assert clone == call and clone.name == "add" and "name" in clone
        clone.name = "changed"
        assert call.name == "add"  # a copy does not share its function with the original


def test_a_bad_function_is_refused_clearly() -> None:
    with pytest.raises(TypeError, match="function must be a mapping"):
        vf.ToolCall(id="c1", function="add")
    call = to_tool_call(WIRE)
    with pytest.raises(TypeError, match="function must be a mapping"):
        call["function"] = 42
    assert call == WIRE
    with pytest.raises(KeyError):
        call.pop("missing")
