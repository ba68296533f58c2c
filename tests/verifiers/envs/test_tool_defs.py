"""``env.tool_defs`` is a live, editable list view of ``env.oai_tools``; ``offered_tools`` picks what a
model call offers from a state's two tool lists, converting only when one of them changed."""

from __future__ import annotations

import copy
import json
import pickle

import pytest
from datasets import Dataset

import verifiers as vf
from verifiers.envs.tool_defs import LinkedTool, ToolDefList, offered_tools, remember_tools
from verifiers.tools.schema import convert_func_to_oai_tool, to_oai_tool, to_tool_def


def ping() -> str:
    """Ping."""
    return "pong"


class Bare(vf.MultiTurnEnv):
    async def env_response(self, messages, state, **kwargs):
        return []


def _env() -> Bare:
    return Bare(dataset=Dataset.from_list([{"question": "q", "answer": "a"}]))


PONG = vf.Tool(name="pong", description="Pong.", parameters={"type": "object", "properties": {}})


# -- env.tool_defs ------------------------------------------------------------------------------


def test_appending_to_tool_defs_offers_the_tool() -> None:
    env = _env()
    env.tool_defs.append(PONG)
    assert [t["function"]["name"] for t in env.oai_tools] == ["pong"]
    assert env.tool_defs[0].name == "pong" and env.tool_defs[0]["description"] == "Pong."


def test_assigning_tool_defs_replaces_the_tools() -> None:
    env = _env()
    env.oai_tools.append(convert_func_to_oai_tool(ping))
    env.tool_defs = [PONG, {"name": "other", "description": "", "parameters": {}}]
    assert [t.name for t in env.tool_defs] == ["pong", "other"]
    env.tool_defs = None
    assert env.oai_tools == [] and len(env.tool_defs) == 0


def test_tuple_era_edits_show_in_the_view() -> None:
    env = _env()
    env.oai_tools = None  # 0.1.x environments may clear it so
    assert len(env.tool_defs) == 0 and env.oai_tools == []
    env.oai_tools = [convert_func_to_oai_tool(ping)]
    assert [t.name for t in env.tool_defs] == ["ping"]


def test_remove_and_membership_compare_in_the_stored_form() -> None:
    env = _env()
    env.oai_tools.append(convert_func_to_oai_tool(ping))
    # A def without the optional "strict" still matches the schema it came from.
    as_def = {k: v for k, v in to_tool_def(convert_func_to_oai_tool(ping)).items() if k != "strict"}
    assert as_def in env.tool_defs and env.tool_defs.count(as_def) == 1
    assert 42 not in env.tool_defs
    env.tool_defs.remove(as_def)
    assert env.oai_tools == []
    with pytest.raises(ValueError):
        env.tool_defs.remove(as_def)
    with pytest.raises(ValueError, match="not a tool definition"):
        env.tool_defs.index(42)


def test_the_view_copies_to_a_plain_list_and_compares_as_one() -> None:
    env = _env()
    env.tool_defs.append(PONG)
    assert isinstance(env.tool_defs, ToolDefList) and isinstance(env.tool_defs, list)
    snapshot = copy.deepcopy(env.tool_defs)
    assert type(snapshot) is list and snapshot == env.tool_defs
    env.tool_defs.clear()
    assert snapshot != env.tool_defs and env.tool_defs == []


def test_item_writes_stick_in_the_offered_schema() -> None:
    env = _env()
    env.tool_defs.append(PONG)
    env.tool_defs[0].strict = True  # 0.3.0: a vf.Tool is a model, its fields assignable
    env.tool_defs[0]["description"] = "Pong, louder."
    env.tool_defs[0].update(name="pong2")  # update goes through the same write path
    function = env.oai_tools[0]["function"]
    assert function["strict"] is True and function["description"] == "Pong, louder." and function["name"] == "pong2"
    env.tool_defs[0].strict = None  # unset again: left out of the schema, as to_oai_tool does
    assert "strict" not in env.oai_tools[0]["function"]
    env.tool_defs[0]["not_a_field"] = 1  # no place in the OpenAI schema: stays on the item only
    assert "not_a_field" not in env.oai_tools[0]["function"]


def test_a_held_item_and_a_held_view_stay_linked() -> None:
    env = _env()
    env.tool_defs.append(PONG)
    view, item = env.tool_defs, env.tool_defs[0]
    env.oai_tools.append(convert_func_to_oai_tool(ping))  # a tuple-era edit after the view was taken
    assert [t.name for t in view] == ["pong", "ping"] and len(view) == 2
    item.description = "held"
    assert env.oai_tools[0]["function"]["description"] == "held"


def test_the_view_serialises_as_a_list_of_defs() -> None:
    env = _env()
    env.tool_defs.append(PONG)
    assert json.loads(json.dumps(env.tool_defs)) == [{**PONG, "strict": None}]
    clone = pickle.loads(pickle.dumps(env.tool_defs))
    assert type(clone) is list and type(clone[0]) is vf.Tool and clone == env.tool_defs


def test_every_list_edit_is_written_back_in_place() -> None:
    env = _env()
    stored = env.oai_tools  # tuple-era code may hold the list itself
    env.tool_defs.extend([PONG, convert_func_to_oai_tool(ping)])
    env.tool_defs.insert(0, {"name": "first", "parameters": {}})
    env.tool_defs += [{"name": "last", "parameters": {}}]
    assert [t["function"]["name"] for t in stored] == ["first", "pong", "ping", "last"]
    env.tool_defs.sort(key=lambda t: t.name)
    env.tool_defs.reverse()
    assert [t.name for t in env.tool_defs] == ["pong", "ping", "last", "first"]
    assert env.tool_defs.pop().name == "first"
    del env.tool_defs[0]
    env.tool_defs[0] = PONG
    env.tool_defs[1:] = []
    assert env.oai_tools is stored and [t["function"]["name"] for t in stored] == ["pong"]


def test_an_unedited_item_keeps_its_schema_object() -> None:
    env = _env()
    schema = convert_func_to_oai_tool(ping)
    env.oai_tools.append(schema)
    env.tool_defs.append(PONG)
    assert env.oai_tools[0] is schema


@pytest.mark.parametrize("bad", [42, "ping", {"description": "no name"}])
def test_a_bad_item_is_refused_and_changes_nothing(bad) -> None:
    env = _env()
    env.tool_defs.append(PONG)
    before = copy.deepcopy(env.oai_tools)
    with pytest.raises((TypeError, ValueError)):
        env.tool_defs.append(bad)
    with pytest.raises((TypeError, ValueError)):
        env.tool_defs[0] = bad
    with pytest.raises((TypeError, ValueError)):
        env.tool_defs = [PONG, bad]
    assert env.oai_tools == before and len(env.tool_defs) == 1


def test_a_repeated_item_gets_its_own_schema() -> None:
    env = _env()
    env.tool_defs.append(PONG)
    env.tool_defs *= 2
    env.tool_defs[1].description = "second only"
    assert [t["function"]["description"] for t in env.oai_tools] == ["Pong.", "second only"]


def test_a_copied_item_is_detached() -> None:
    env = _env()
    env.tool_defs.append(PONG)
    assert isinstance(env.tool_defs[0], LinkedTool)
    detached = copy.copy(env.tool_defs[0])
    assert type(detached) is vf.Tool
    detached.description = "copy only"
    assert env.oai_tools[0]["function"]["description"] == "Pong."


# -- offered_tools --------------------------------------------------------------------------------


def _state(*names: str) -> vf.State:
    tools = [to_oai_tool(vf.Tool(name=n, parameters={})) for n in names]
    state = vf.State.new(prompt=[], oai_tools=tools, tool_defs=[to_tool_def(t) for t in tools])
    remember_tools(state)
    return state


def _names(tools: list) -> list[str]:
    return [t["function"]["name"] for t in tools]


def test_unchanged_lists_are_offered_again_without_converting() -> None:
    state = _state("a")
    first = offered_tools(state)
    assert _names(first) == ["a"] and offered_tools(state) is first is state["oai_tools"]


def test_oai_tools_replaced_by_the_env_are_offered_and_tool_defs_follow() -> None:
    state = _state("a")
    offered_tools(state)
    state["oai_tools"] = [to_oai_tool(vf.Tool(name="set_by_env", parameters={}))]  # 0.1.8-0.2.x setup_state
    assert _names(offered_tools(state)) == ["set_by_env"]
    assert [t.name for t in state["tool_defs"]] == ["set_by_env"]
    state["oai_tools"].append(vf.Tool(name="grown", parameters={}))  # a def in the OpenAI list: converted
    assert _names(offered_tools(state)) == ["set_by_env", "grown"]


def test_tool_defs_replaced_or_grown_are_offered_and_oai_tools_follow() -> None:
    state = _state("a")
    state["tool_defs"] = [vf.Tool(name="b", parameters={})]
    assert _names(offered_tools(state)) == ["b"] and _names(state["oai_tools"]) == ["b"]
    state["tool_defs"].append(vf.Tool(name="c", parameters={}))
    assert _names(offered_tools(state)) == ["b", "c"]
    state["tool_defs"][0].description = "edited in place"
    assert offered_tools(state)[0]["function"]["description"] == "edited in place"


def test_none_offers_no_tools() -> None:
    state = _state("a")
    state["oai_tools"] = None
    assert offered_tools(state) == [] and state["tool_defs"] == []


def test_a_state_the_sdk_did_not_make_offers_its_tool_defs_else_its_oai_tools() -> None:
    both = {"tool_defs": [vf.Tool(name="def", parameters={})], "oai_tools": [to_oai_tool(vf.Tool(name="oai"))]}
    assert _names(offered_tools(both)) == ["def"]
    assert _names(offered_tools({"oai_tools": [to_oai_tool(vf.Tool(name="oai"))]})) == ["oai"]
    assert offered_tools({}) == []


def test_a_copied_state_keeps_its_memory() -> None:
    state = _state("a")
    clone = copy.deepcopy(state)
    clone["oai_tools"] = [to_oai_tool(vf.Tool(name="b"))]
    assert _names(offered_tools(clone)) == ["b"] and _names(offered_tools(state)) == ["a"]


def test_bad_tools_in_the_state_are_refused_clearly() -> None:
    state = _state("a")
    state["oai_tools"] = [42]
    with pytest.raises(TypeError, match="tool definition must be a mapping"):
        offered_tools(state)
