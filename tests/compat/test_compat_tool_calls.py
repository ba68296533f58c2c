"""Environments that handle tool calls and tool definitions themselves score as on the originals.

The shape of a tool call (0.1.x's OpenAI objects, 0.3.0's flat ``vf.ToolCall``), ``call_tool``
overrides with the originals' signature, and where the offered tools come from
(``tool_defs`` on the environment, the row, the state, or one call). Each case also
checks the original's own scores, so a scenario that stopped exercising its feature fails.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness import EvalRun

from verifiers.testing import Reply
from verifiers.testing.policies import content_text


def raw_calls_policy(request: Any) -> Reply:
    """The user message is a JSON list of ``[tool name, raw arguments text]``: the first turn sends
    those calls verbatim (malformed arguments included), the next answers
    ``<answer>r1|r2...</answer>`` with the tool results in call order."""
    results = [content_text(m.get("content")) for m in _since_last_user(request.messages) if m.get("role") == "tool"]
    if results:
        return Reply("<answer>" + "|".join(results) + "</answer>")
    calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": arguments}}
        for i, (name, arguments) in enumerate(json.loads(request.last_user_text))
    ]
    return Reply("", tool_calls=calls)


def offered_tools_policy(request: Any) -> Reply:
    """Answer with the names of the offered tools, in order, and the requested temperature."""
    names = ",".join(t["function"]["name"] for t in request.tools)
    return Reply(f"TOOLS:{names} T={request.sampling.get('temperature')}")


def _since_last_user(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    return messages[last_user + 1:]


def _state_toolcalls(run: EvalRun) -> None:
    assert run.metrics["calls_read_flat"] == [1.0] * 4  # .id/.name/.arguments read on every call
    assert run.metrics["ok_results"] == [2.0, 0.0, 1.0, 0.0]  # names rewritten via vf.ToolCall were run
    assert run.metrics["error_results"] == [0.0, 1.0, 1.0, 3.0]  # malformed calls answered, not crashed
    assert run.metrics["denied_by_override"] == [0.0, 1.0, 0.0, 0.0]  # call_tool's exception, formatted
    assert run.metrics["correct"] == [1.0] * 4
    assert run.stop_conditions == ["no_tools_called"] * 4


def _tuple_toolcalls(run: EvalRun) -> None:
    assert run.metrics["calls_read_as_objects"] == [1.0] * 3  # tool_call.function.name / .arguments
    assert run.metrics["correct"] == [1.0] * 3  # a failing tool became "OK 'missing'" via super().call_tool
    assert run.metrics["denied"] == [0.0, 1.0, 0.0]  # the four-argument override answered itself
    assert run.rewards == [1.5, 1.25, 1.5]


def _state_tooldefs(run: EvalRun) -> None:
    assert run.metrics["replies_as_expected"] == [1.0] * 5
    assert run.metrics["state_tool_names"] == [2.0, 1.0, 1.0, 2.0, 3.0]


TOOL_CALL_ENVS = [
    # (env module in tests/compat/envs, era, scripted policy, check on the original)
    ("compat_state_toolcalls", "state", raw_calls_policy, _state_toolcalls),
    ("compat_tuple_toolcalls", "tuple", raw_calls_policy, _tuple_toolcalls),
    ("compat_state_tooldefs", "state", offered_tools_policy, _state_tooldefs),
]


@pytest.mark.slow
@pytest.mark.parametrize(("env_module", "era", "policy", "check"), TOOL_CALL_ENVS, ids=[e[0] for e in TOOL_CALL_ENVS])
def test_tool_call_env_scores_as_on_the_original(compare_with_original, env_module, era, policy, check):
    compare_with_original(env_module, era, policy, check)
