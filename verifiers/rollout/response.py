"""Reading a model response into what the rollout keeps: a message, its tokens, truncation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from verifiers.messages import AssistantMessage, to_tool_call
from verifiers.state import TrajectoryStepTokens
from verifiers.tokens.response_tokens import step_tokens


@dataclass
class ParsedResponse:
    """The parts of one model response a rollout records."""

    message: AssistantMessage | str  # a string in completion mode
    tokens: TrajectoryStepTokens | None
    is_truncated: bool
    completion_tokens: int


def parse_response(response: Any, message_type: str) -> ParsedResponse:
    """Turn a ChatCompletion/Completion into an assistant message (plain dicts, never SDK objects)."""
    choice = response.choices[0]
    usage = getattr(response, "usage", None)
    completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
    truncated = getattr(choice, "finish_reason", None) == "length"
    tokens = step_tokens(response)
    if message_type == "completion":
        return ParsedResponse(getattr(choice, "text", "") or "", tokens, truncated, completion_tokens)
    raw = choice.message
    message = AssistantMessage(content=getattr(raw, "content", None) or "")
    tool_calls = getattr(raw, "tool_calls", None)
    if tool_calls:
        message["tool_calls"] = [to_tool_call(tc) for tc in tool_calls]
    reasoning = (getattr(raw, "reasoning_content", None)
                 or (getattr(raw, "model_extra", None) or {}).get("reasoning_content"))
    if reasoning:
        message["reasoning_content"] = reasoning
    return ParsedResponse(message, tokens, truncated, completion_tokens)


__all__ = ["ParsedResponse", "parse_response"]
