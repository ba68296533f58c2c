"""ToolEnv and StatefulToolEnv: tool calls from a real server, and every malformed call answered in words."""

from __future__ import annotations

import json
from typing import Any

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
    client = client_for(serve(_calls(("open_box", '{"label": "red"}'), ("open_box", '{"label": "x", "box_id": "other"}'))))
    env = Box(dataset=_ds())
    params = env.oai_tools[0]["function"]["parameters"]
    assert "box_id" not in params["properties"] and params["required"] == ["label"]
    state = await env.rollout(env.get_dataset()[0], client, "m")
    contents = [m["content"] for m in state["completion"] if m["role"] == "tool"]
    assert contents[0] == "B7:red"
    assert "unexpected arguments: box_id" in contents[1]  # the model cannot point the tool elsewhere
