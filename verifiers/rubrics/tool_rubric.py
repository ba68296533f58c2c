"""ToolRubric: metrics counting the tool calls a model made.

Every function here has weight 0: they are reported, never rewarded::

    rubric = vf.ToolRubric(tools=[search, calculator])
    # metrics: total_tool_calls, search_calls, calculator_calls
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from verifiers.parsers.parser import message_role
from verifiers.rubrics.injection import func_name
from verifiers.rubrics.rubric import Rubric
from verifiers.types import Messages


class ToolRubric(Rubric):
    """Weight-0 metrics ``total_tool_calls`` and ``<tool_name>_calls`` for each tool."""

    def __init__(self, tools: Sequence[Callable[..., Any]] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tools = list(tools or [])
        for tool in self.tools:
            if not callable(tool):
                raise TypeError(f"ToolRubric takes the tool functions themselves, got {type(tool).__name__}: {tool!r}")
        self.tool_names = [func_name(tool) for tool in self.tools]
        self.add_metric(self.total_tool_calls)
        for name in self.tool_names:
            self.add_metric(_calls_of(name))

    def total_tool_calls(self, completion: Messages) -> float:
        """How many tool calls the assistant made in ``completion``."""
        return float(len(tool_call_names(completion)))


def _calls_of(tool_name: str) -> Callable[[Messages], float]:
    def count(completion: Messages) -> float:
        return float(tool_call_names(completion).count(tool_name))

    count.__name__ = f"{tool_name}_calls"
    count.__doc__ = f"How many times the assistant called {tool_name!r}."
    return count


def tool_call_names(completion: Messages) -> list[str]:
    """Names of the tools the assistant called, in order (tool calls as dicts or SDK objects)."""
    if isinstance(completion, str):
        return []
    names = []
    for message in completion:
        if message_role(message) != "assistant":
            continue
        # the calls as dicts or SDK objects, whatever the message's declared type says
        calls: Any = message.get("tool_calls") if isinstance(message, Mapping) else getattr(message, "tool_calls", None)
        for call in calls or []:
            function = call.get("function") if isinstance(call, Mapping) else getattr(call, "function", None)
            name = function.get("name") if isinstance(function, Mapping) else getattr(function, "name", None)
            names.append(str(name))
    return names


__all__ = ["ToolRubric", "tool_call_names"]
