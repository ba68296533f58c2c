"""``ToolEnv``: the model calls Python functions as tools until it answers without one."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, cast

from verifiers.awaitables import maybe_await
from verifiers.decorators import stop
from verifiers.envs.multiturn_env import MultiTurnEnv
from verifiers.errors import Error, ToolCallError, ToolParseError
from verifiers.messages import ToolCall, ToolMessage, to_message, to_tool_call
from verifiers.rollout.era import user_override
from verifiers.state import State
from verifiers.tools.calls import check_arguments, check_hidden_arguments, parse_tool_call, read_tool_call, unknown_tool
from verifiers.tools.schema import convert_func_to_oai_tool

logger = logging.getLogger("verifiers.tools")


def _last_assistant(messages: Any) -> Any:
    if isinstance(messages, list) and messages and messages[-1].get("role") == "assistant":
        return messages[-1]
    return None


class ToolEnv(MultiTurnEnv):
    """Offer ``tools`` (sync or async functions) to the model; run its calls in order.

    A malformed call (unknown tool, bad JSON, wrong arguments) is answered with a
    tool message that says what was wrong; a tool that raises is answered with
    ``error_formatter(exception)``. Both are counted in ``state["tool_errors"]``.
    An error of a type in ``stop_errors`` ends the rollout instead (0.3.0).

    A subclass may override ``call_tool(tool_name, tool_args, tool_call_id)``: it is
    called with exactly those arguments, for any tool name the model sends (it may
    serve tools outside ``tools``), and whatever it raises is answered like a tool's error.

    Example::

        def add(a: int, b: int) -> int:
            \"\"\"Add two integers.\"\"\"
            return a + b

        env = vf.ToolEnv(tools=[add], dataset=ds, max_turns=5)
    """

    def __init__(self, tools: list[Callable[..., Any]] | None = None, max_turns: int = 10,
                 error_formatter: Callable[[Exception], str] = lambda e: str(e),
                 stop_errors: tuple[type[Exception], ...] | list[type[Exception]] = (), **kwargs: Any) -> None:
        self.tools: list[Callable[..., Any]] = list(tools or [])
        # Errors that end the rollout (recorded in state["error"]) instead of being the model's feedback.
        self.stop_errors = tuple(stop_errors)
        self.tool_map: dict[str, Callable[..., Any]] = {t.__name__: t for t in self.tools}
        self.error_formatter = error_formatter
        kwargs.setdefault("oai_tools", [convert_func_to_oai_tool(t) for t in self.tools])
        super().__init__(max_turns=max_turns, **kwargs)
        self._custom_call_tool = user_override(type(self), "call_tool") is not None

    def add_tool(self, tool: Callable[..., Any]) -> None:
        self.tools.append(tool)
        self.tool_map[tool.__name__] = tool
        self.oai_tools.append(convert_func_to_oai_tool(tool))

    def remove_tool(self, tool: Callable[..., Any]) -> None:
        self.tools.remove(tool)
        self.tool_map.pop(tool.__name__, None)
        self.oai_tools = [t for t in self.oai_tools if t["function"]["name"] != tool.__name__]

    @stop
    async def no_tools_called(self, state: State) -> bool:
        if not state["trajectory"]:
            return False
        last = _last_assistant(state["trajectory"][-1]["completion"])
        return last is not None and not last.get("tool_calls")

    def monitor_metrics(self, state: State) -> dict[str, float]:
        """``num_turns``, ``total_tool_calls`` and one ``<tool>_calls`` per tool."""
        counts = {f"{name}_calls": 0.0 for name in self.tool_map}
        total = 0.0
        for message in state.get("completion") or []:
            for call in (message.get("tool_calls") or []) if isinstance(message, dict) else []:
                total += 1
                key = f"{(call.get('function') or {}).get('name')}_calls"
                if key in counts:
                    counts[key] += 1
        return {**super().monitor_metrics(state), "total_tool_calls": total, **counts}

    def hidden_args(self, tool_name: str) -> set[str]:
        """Arguments the model must not pass (see StatefulToolEnv)."""
        return set()

    async def call_tool(self, tool_name: str, tool_args: dict[str, Any], tool_call_id: str,
                        **kwargs: Any) -> ToolMessage:
        """Run one tool and wrap its result as a tool message.

        State era (0.3.0): the tool's exception propagates, and ``env_response`` answers the
        model with ``error_formatter(e)``; an override may catch it from ``super().call_tool``.
        Tuple era (0.1.x): the answer to a failing tool is made here, as 0.1.x's did.
        Called with ``state=`` (SDK-native code; neither original passes it): a failing tool
        is answered here and counted in ``state["tool_errors"]``, in either era.
        """
        state = kwargs.get("state")
        if isinstance(state, dict):
            return await self._guarded(self._run_tool, tool_name, tool_args, tool_call_id, state)
        if not self.conventions.answers_tool_errors_in_call_tool:
            return await self._run_tool(tool_name, tool_args, tool_call_id)
        try:
            return await self._run_tool(tool_name, tool_args, tool_call_id)
        except self.stop_errors:
            raise
        except Exception as error:  # policy: a tool's exception is the model's feedback
            logger.debug("tool %s raised %r", tool_name, error)
            return ToolMessage(role="tool", content=self.error_formatter(error), tool_call_id=tool_call_id)

    async def _run_tool(self, tool_name: str, tool_args: dict[str, Any], tool_call_id: str) -> ToolMessage:
        if tool_name not in self.tool_map:
            raise unknown_tool(tool_name, self.tool_map)
        result = await maybe_await(self.tool_map[tool_name], **tool_args)
        return ToolMessage(role="tool", content=self._tool_content(result), tool_call_id=tool_call_id)

    def _tool_content(self, result: Any) -> Any:
        # 0.3.0 passes text/image content parts through (a tool may return an image); 0.1.x sent str().
        if self.conventions.passes_content_parts and _is_content_parts(result):
            return result
        return str(result)

    async def prepare_tool_args(self, tool_name: str, tool_args: dict[str, Any], messages: Any,
                                state: State) -> dict[str, Any]:
        """Hook for StatefulToolEnv to inject hidden arguments."""
        return tool_args

    async def env_response(self, messages: Any, state: State, **kwargs: Any) -> Any:
        """Answer every tool call of the last assistant message, in order."""
        last = _last_assistant(messages)
        calls = (last.get("tool_calls") or []) if last is not None else []
        replies = [await self._answer(tool_call, messages, state) for tool_call in calls]
        return self.conventions.hook_reply(replies, state)

    async def _answer(self, tool_call: Any, messages: Any, state: State) -> ToolMessage:
        """The tool message answering one call: the tool's result, or what went wrong, in words."""
        call = to_tool_call(tool_call)
        try:
            name, args, call_id = self._parse(call)
        except ToolParseError as error:
            state.setdefault("tool_errors", []).append(str(error))
            return ToolMessage(role="tool", content=str(error), tool_call_id=call.id)
        args = await self.prepare_tool_args(name, args, messages, state)
        # An override of call_tool is called exactly as the originals call it (no state keyword),
        # and may serve tools that tool_map does not hold (0.3.0 passes every name through).
        run = self.call_tool if self._custom_call_tool else self._run_tool
        return await self._guarded(run, name, args, call_id, state)

    async def _guarded(self, run: Callable[..., Any], name: str, args: dict[str, Any], call_id: str,
                       state: dict[str, Any]) -> ToolMessage:
        """``run``'s reply to one call; a failure the model should hear of is answered and counted."""
        try:
            reply = await run(name, args, call_id)
        except self.stop_errors as error:
            if isinstance(error, Error):
                raise  # the SDK's own errors are recorded as they are (a SandboxError stays one)
            raise ToolCallError(f"tool {name!r} failed: {error!r}") from error
        except Exception as error:  # policy: a failing tool (or call_tool) is the model's feedback, counted
            state.setdefault("tool_errors", []).append(f"{name}: {type(error).__name__}")
            logger.debug("tool %s raised %r", name, error)
            return ToolMessage(role="tool", content=self.error_formatter(error), tool_call_id=call_id)
        # run is _run_tool or call_tool, both of which answer with a tool message; an override may give it as a
        # dict or a model, and to_message only normalises that form
        return cast(ToolMessage, to_message(reply))

    def _parse(self, tool_call: ToolCall) -> tuple[str, dict[str, Any], str]:
        """Read and check one call; raises ToolParseError with a message meant for the model."""
        if self._custom_call_tool:
            name, args, call_id = read_tool_call(tool_call)
        else:
            name, args, call_id = parse_tool_call(tool_call, self.tool_map)
        check_hidden_arguments(name, args, self.hidden_args(name))
        if not self._custom_call_tool:
            check_arguments(name, self.tool_map[name], args, self.hidden_args(name))
        return name, args, call_id


def _is_content_parts(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(part, dict) and part.get("type") in ("text", "image_url") for part in value
    )


__all__ = ["ToolEnv"]
