"""ToolEnv and StatefulToolEnv: tool calls from a real server, and every malformed call answered in words."""

from __future__ import annotations

import json
from typing import Any

import pytest
from datasets import Dataset

import verifiers as vf
from verifiers.testing import Reply


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


async def slow_upper(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


def boom(x: int) -> int:
    """Always fails."""
    raise RuntimeError("tool exploded")


def _ds() -> Dataset:
    return Dataset.from_list([{"question": "add", "answer": "3"}])


def _calls(*calls: tuple[str, Any]) -> Any:
    """A policy that makes the given tool calls in its first turn, then answers 'done'."""

    def policy(request):
        if any(m.get("role") == "tool" for m in request.messages):
            return Reply(content="done: " + " | ".join(m["content"] for m in request.messages if m["role"] == "tool"))
        return Reply(tool_calls=[
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}
            for i, (name, args) in enumerate(calls)
        ])

    return policy


def test_tool_schema_from_signature_and_docstring() -> None:
    env = vf.ToolEnv(tools=[add, slow_upper], dataset=_ds())
    schema = env.oai_tools[0]["function"]
    assert schema["name"] == "add" and schema["description"] == "Add two integers."
    assert schema["parameters"]["properties"]["a"] == {"type": "integer", "description": "the first."}
    assert schema["parameters"]["required"] == ["a", "b"]


async def test_tool_calls_run_and_rollout_ends_without_calls(serve, client_for) -> None:
    client = client_for(serve(_calls(("add", json.dumps({"a": 1, "b": 2})), ("slow_upper", '{"text": "hi"}'))))
    env = vf.ToolEnv(tools=[add, slow_upper], dataset=_ds())
    state = await env.rollout(env.get_dataset()[0], client, "m")
    tool_msgs = [m for m in state["completion"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_msgs] == ["3", "HI"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["call_0", "call_1"]
    assert state["completion"][-1]["content"] == "done: 3 | HI"
    assert state["stop_condition"] == "no_tools_called"
    # tool calls are plain dicts, never SDK objects
    assert isinstance(state["completion"][0]["tool_calls"][0], dict)
    json.dumps(state["completion"])


async def test_malformed_tool_calls_become_readable_tool_messages(serve, client_for) -> None:
    client = client_for(serve(_calls(
        ("nope", "{}"), ("add", "{not json"), ("add", "[1, 2]"), ("add", '{"a": 1}'),
        ("add", '{"a": 1, "b": 2, "c": 3}'), ("boom", '{"x": 1}'),
    )))
    env = vf.ToolEnv(tools=[add, boom], dataset=_ds())
    state = await env.rollout(env.get_dataset()[0], client, "m")
    contents = [m["content"] for m in state["completion"] if m["role"] == "tool"]
    assert "unknown tool 'nope'" in contents[0] and "add, boom" in contents[0]
    assert "not valid JSON" in contents[1]
    assert "must be a JSON object" in contents[2]
    assert "missing required arguments: b" in contents[3]
    assert "unexpected arguments: c" in contents[4]
    assert contents[5] == "tool exploded"  # the default error_formatter is str(e)
    assert len(state["tool_errors"]) == 6
    assert state["error"] is None  # the model's mistakes are not SDK failures


class Box(vf.StatefulToolEnv):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_tool(self.open_box, args_to_skip=["box_id"])

    @staticmethod
    def open_box(label: str, box_id: str) -> str:
        """Open a box."""
        return f"{box_id}:{label}"

    def update_tool_args(self, tool_name, tool_args, messages, state, **kwargs):
        return {**tool_args, "box_id": state["box"]}

    async def setup_state(self, state, **kwargs):
        state["box"] = "B7"
        return state


async def test_stateful_tool_env_hides_and_injects_arguments(serve, client_for) -> None:
    client = client_for(serve(_calls(("open_box", '{"label": "red"}'),
                                     ("open_box", '{"label": "x", "box_id": "other"}'))))
    env = Box(dataset=_ds())
    params = env.oai_tools[0]["function"]["parameters"]
    assert "box_id" not in params["properties"] and params["required"] == ["label"]
    state = await env.rollout(env.get_dataset()[0], client, "m")
    contents = [m["content"] for m in state["completion"] if m["role"] == "tool"]
    assert contents[0] == "B7:red"
    assert "unexpected arguments: box_id" in contents[1]  # the model cannot point the tool elsewhere


# -- call_tool overrides and tool-call shapes (both eras) -------------------------------------------


class Audited(vf.ToolEnv):
    """A 0.3.0-style override: the originals' signature, no **kwargs; fails for one argument."""

    async def call_tool(self, tool_name, tool_args, tool_call_id):
        if tool_args.get("a") == 13:
            raise PermissionError("13 is not allowed")
        message = await super().call_tool(tool_name, tool_args, tool_call_id)
        return vf.ToolMessage(content=f"audited {message['content']}", tool_call_id=tool_call_id)


class Remote(vf.ToolEnv):
    """An override serving a tool that tool_map does not hold (as MCP-backed envs do)."""

    async def call_tool(self, tool_name, tool_args, tool_call_id, **kwargs):
        if tool_name == "remote":
            return {"role": "tool", "content": f"remote {tool_args['q']}", "tool_call_id": tool_call_id}
        return await super().call_tool(tool_name, tool_args, tool_call_id, **kwargs)


async def test_call_tool_overrides_are_called_as_the_originals_call_them(serve, client_for) -> None:
    client = client_for(serve(_calls(("add", '{"a": 1, "b": 2}'), ("add", '{"a": 13, "b": 0}'),
                                     ("boom", '{"x": 1}'), ("add", "{oops"))))
    env = Audited(tools=[add, boom], dataset=_ds(), error_formatter=lambda e: f"ERR {type(e).__name__}: {e}")
    state = await env.rollout(env.get_dataset()[0], client, "m")
    contents = [m["content"] for m in state["completion"] if m["role"] == "tool"]
    assert contents[0] == "audited 3"
    assert contents[1] == "ERR PermissionError: 13 is not allowed"  # the override's exception, formatted (0.3.0)
    assert contents[2] == "ERR RuntimeError: tool exploded"  # super().call_tool raised through the override
    assert "not valid JSON" in contents[3]  # malformed arguments never reach call_tool
    assert state["error"] is None and len(state["tool_errors"]) == 3


async def test_an_override_may_serve_tools_outside_tool_map(serve, client_for) -> None:
    client = client_for(serve(_calls(("remote", '{"q": "x"}'), ("missing", "{}"))))
    env = Remote(tools=[add], dataset=_ds())
    state = await env.rollout(env.get_dataset()[0], client, "m")
    contents = [m["content"] for m in state["completion"] if m["role"] == "tool"]
    assert contents[0] == "remote x"
    assert "unknown tool 'missing'" in contents[1]


class Renamer(vf.ToolEnv):
    """Reads the calls as 0.3.0's flat vf.ToolCall and answers rewritten ones it built itself."""

    async def env_response(self, messages, state, **kwargs):
        calls = messages[-1].tool_calls
        state["seen"] = [(c.id, c.name, c.arguments, c.function.name) for c in calls]
        renamed = [vf.ToolCall(id=c.id, name=c.name.removeprefix("old_"), arguments=c.arguments) for c in calls]
        rewritten = vf.AssistantMessage(content="", tool_calls=renamed)
        return await super().env_response([*messages[:-1], rewritten], state, **kwargs)


async def test_env_built_flat_tool_calls_are_carried_out(serve, client_for) -> None:
    client = client_for(serve(_calls(("old_add", '{"a": 2, "b": 2}'))))
    env = Renamer(tools=[add], dataset=_ds())
    state = await env.rollout(env.get_dataset()[0], client, "m")
    assert state["seen"] == [("call_0", "old_add", '{"a": 2, "b": 2}', "old_add")]
    assert [m["content"] for m in state["completion"] if m["role"] == "tool"] == ["4"]


class TupleEraTools(vf.ToolEnv):
    """0.1.x: reads tool_call.function.name, overrides call_tool without **kwargs, returns (msgs, state)."""

    async def call_tool(self, tool_name, tool_args, tool_call_id):
        return await super().call_tool(tool_name, tool_args, tool_call_id)

    async def env_response(self, messages, state, **kwargs):
        state["names"] = [c.function.name for c in messages[-1]["tool_calls"]]
        tool_messages, state = await super().env_response(messages, state, **kwargs)
        return tool_messages, state


async def test_tuple_era_call_tool_answers_a_failing_tool_itself(serve, client_for) -> None:
    client = client_for(serve(_calls(("boom", '{"x": 1}'), ("add", '{"a": 1, "b": 1}'))))
    env = TupleEraTools(tools=[add, boom], dataset=_ds())
    assert env.era == "tuple"
    assert (await env.call_tool("boom", {"x": 1}, "c"))["content"] == "tool exploded"  # 0.1.x: no exception
    state = await env.rollout(env.get_dataset()[0], client, "m")
    assert state["names"] == ["boom", "add"]
    assert [m["content"] for m in state["completion"] if m["role"] == "tool"] == ["tool exploded", "2"]


async def test_state_era_call_tool_lets_the_tool_error_propagate() -> None:
    env = vf.ToolEnv(tools=[boom], dataset=_ds())
    with pytest.raises(RuntimeError, match="tool exploded"):
        await env.call_tool("boom", {"x": 1}, "c")


class Fatal(Exception):
    pass


def fatal() -> str:
    """Fails for good."""
    raise Fatal("disk gone")


async def test_a_stop_error_ends_the_rollout_as_a_recorded_tool_call_error(serve, client_for) -> None:
    client = client_for(serve(_calls(("fatal", "{}"))))
    env = vf.ToolEnv(tools=[fatal], dataset=_ds(), stop_errors=[Fatal])
    state = await env.rollout(env.get_dataset()[0], client, "m")
    assert isinstance(state["error"], vf.ToolCallError) and isinstance(state["error"].__cause__, Fatal)
    assert state["stop_condition"] == "has_error"


# -- call_tool(..., state=state) from SDK-native code -------------------------------------------------


class NativeCaller(vf.ToolEnv):
    """SDK-native: its own env_response calls call_tool with state=, as the SDK's own did before 0.3.0 support."""

    async def env_response(self, messages, state, **kwargs):
        replies = []
        for call in messages[-1].tool_calls:
            args = json.loads(call.arguments)
            replies.append(await self.call_tool(call.name, args, call.id, state=state))
        return replies


async def test_call_tool_with_state_answers_and_counts_a_failing_tool(serve, client_for) -> None:
    client = client_for(serve(_calls(("boom", '{"x": 1}'), ("add", '{"a": 1, "b": 2}'), ("nope", "{}"))))
    env = NativeCaller(tools=[add, boom], dataset=_ds(), error_formatter=lambda e: f"ERR {e}")
    state = await env.rollout(env.get_dataset()[0], client, "m")
    contents = [m["content"] for m in state["completion"] if m["role"] == "tool"]
    assert contents[:2] == ["ERR tool exploded", "3"]
    assert "unknown tool 'nope'" in contents[2]
    assert state["tool_errors"] == ["boom: RuntimeError", "nope: ToolParseError"] and state["error"] is None


async def test_call_tool_with_state_counts_in_the_tuple_era_too() -> None:
    env = TupleEraTools(tools=[boom], dataset=_ds())
    state: dict[str, Any] = {}
    reply = await vf.ToolEnv.call_tool(env, "boom", {"x": 1}, "c", state=state)
    assert reply["content"] == "tool exploded" and state["tool_errors"] == ["boom: RuntimeError"]


async def test_call_tool_without_a_usable_state_keeps_0_3_0s_exception() -> None:
    env = vf.ToolEnv(tools=[boom], dataset=_ds())
    for bad_state in ({"state": None}, {"state": "not a state"}, {}):
        with pytest.raises(RuntimeError, match="tool exploded"):
            await env.call_tool("boom", {"x": 1}, "c", **bad_state)


async def test_call_tool_with_state_still_ends_the_rollout_on_a_stop_error() -> None:
    env = vf.ToolEnv(tools=[fatal], dataset=_ds(), stop_errors=[Fatal])
    state: dict[str, Any] = {}
    with pytest.raises(vf.ToolCallError) as raised:
        await env.call_tool("fatal", {}, "c", state=state)
    assert isinstance(raised.value.__cause__, Fatal) and "tool_errors" not in state
