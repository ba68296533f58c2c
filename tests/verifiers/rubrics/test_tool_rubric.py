from __future__ import annotations

import pytest
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageFunctionToolCall
from openai.types.chat.chat_completion_message_function_tool_call import Function

from verifiers.rubrics.tool_rubric import ToolRubric, tool_call_names


def search(query: str) -> str:
    return query


def calculator(expression: str) -> str:
    return expression


def dict_call(name: str) -> dict:
    return {"id": f"call-{name}", "type": "function", "function": {"name": name, "arguments": "{}"}}


def object_call(name: str) -> ChatCompletionMessageFunctionToolCall:
    function = Function(name=name, arguments="{}")
    return ChatCompletionMessageFunctionToolCall(id=f"call-{name}", type="function", function=function)


COMPLETION = [
    {"role": "assistant", "content": None, "tool_calls": [dict_call("search"), dict_call("calculator")]},
    {"role": "tool", "tool_call_id": "call-search", "content": "result"},
    {"role": "assistant", "content": "again", "tool_calls": [object_call("search")]},
    ChatCompletionMessage(role="assistant", content=None, tool_calls=[object_call("search")]),
    {"role": "user", "content": "not a tool call", "tool_calls": [dict_call("calculator")]},
    {"role": "assistant", "content": "done"},
]


def test_metric_names_and_zero_weights():
    rubric = ToolRubric(tools=[search, calculator])
    assert rubric.get_reward_func_names() == ["total_tool_calls", "search_calls", "calculator_calls"]
    assert rubric.get_reward_weights() == [0.0, 0.0, 0.0]
    assert rubric.tool_names == ["search", "calculator"]


async def test_counts_tool_calls_in_dict_and_object_form():
    score = await ToolRubric(tools=[search, calculator]).score_rollout([], COMPLETION, "", {})
    assert score.metrics == {"total_tool_calls": 4.0, "search_calls": 3.0, "calculator_calls": 1.0}
    assert score.reward == 0.0


async def test_no_tools_and_completion_mode():
    rubric = ToolRubric()
    assert rubric.get_reward_func_names() == ["total_tool_calls"]
    assert (await rubric.score_rollout("q", "plain text", "", {})).metrics == {"total_tool_calls": 0.0}
    assert tool_call_names([{"role": "assistant", "content": "hi"}]) == []


def test_non_callable_tools_are_rejected():
    with pytest.raises(TypeError, match="tool functions themselves, got str"):
        ToolRubric(tools=["search"])
