"""``env.tool_defs`` is a live, editable view of ``env.oai_tools``."""

from __future__ import annotations

import copy

from datasets import Dataset

import verifiers as vf
from verifiers.tools.schema import ToolDefList, convert_func_to_oai_tool, to_tool_def


def ping() -> str:
    """Ping."""
    return "pong"


class Bare(vf.MultiTurnEnv):
    async def env_response(self, messages, state, **kwargs):
        return []


def _env() -> Bare:
    return Bare(dataset=Dataset.from_list([{"question": "q", "answer": "a"}]))


PONG = vf.Tool(name="pong", description="Pong.", parameters={"type": "object", "properties": {}})


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
    env.oai_tools = [convert_func_to_oai_tool(ping)]
    assert [t.name for t in env.tool_defs] == ["ping"]


def test_remove_and_membership_compare_in_the_stored_form() -> None:
    env = _env()
    env.oai_tools.append(convert_func_to_oai_tool(ping))
    # A def without the optional "strict" still matches the schema it came from.
    as_def = {k: v for k, v in to_tool_def(convert_func_to_oai_tool(ping)).items() if k != "strict"}
    assert as_def in env.tool_defs
    env.tool_defs.remove(as_def)
    assert env.oai_tools == []


def test_the_view_copies_to_a_plain_list_and_compares_as_one() -> None:
    env = _env()
    env.tool_defs.append(PONG)
    assert isinstance(env.tool_defs, ToolDefList)
    snapshot = copy.deepcopy(env.tool_defs)
    assert isinstance(snapshot, list) and snapshot == env.tool_defs
    env.tool_defs.clear()
    assert snapshot != env.tool_defs and env.tool_defs == []


def test_a_tool_built_without_strict_reads_it_as_none() -> None:
    assert PONG.strict is None and "strict" not in PONG
