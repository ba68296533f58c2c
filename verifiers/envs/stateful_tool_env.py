"""``StatefulToolEnv``: tools with arguments the environment fills in from the rollout's state."""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

from verifiers.awaitables import maybe_await
from verifiers.envs.tool_env import ToolEnv
from verifiers.state import State
from verifiers.tools.schema import convert_func_to_oai_tool


class StatefulToolEnv(ToolEnv):
    """A :class:`ToolEnv` whose tools take hidden arguments (e.g. a sandbox id).

    ``add_tool(tool, args_to_skip=[...])`` hides those parameters from the
    model's schema; ``update_tool_args`` supplies them before each call. The
    model cannot pass a hidden argument itself: such a call is rejected with a
    message, so it cannot, say, point a tool at another rollout's sandbox.

    Example::

        class Files(vf.StatefulToolEnv):
            def __init__(self, **kw):
                super().__init__(**kw)
                self.add_tool(read_file, args_to_skip=["root"])

            def update_tool_args(self, tool_name, tool_args, messages, state, **kwargs):
                return {**tool_args, "root": state["root"]}
    """

    def __init__(self, tools: list[Callable[..., Any]] | None = None, max_turns: int = 10, **kwargs: Any) -> None:
        self.skipped_args: dict[str, list[str]] = {}
        super().__init__(tools=tools, max_turns=max_turns, **kwargs)

    def add_tool(self, tool: Callable[..., Any], args_to_skip: list[str] | None = None) -> None:
        skip = list(args_to_skip or [])
        schema = convert_func_to_oai_tool(tool)
        parameters = schema["function"]["parameters"]
        for name in skip:
            parameters["properties"].pop(name, None)
            if name in parameters["required"]:
                parameters["required"].remove(name)
        self.tools.append(tool)
        self.tool_map[tool.__name__] = tool
        self.oai_tools.append(schema)
        self.skipped_args[tool.__name__] = skip

    def hidden_args(self, tool_name: str) -> set[str]:
        return set(self.skipped_args.get(tool_name, []))

    @abc.abstractmethod
    def update_tool_args(self, tool_name: str, tool_args: dict[str, Any], messages: Any, state: State,
                         **kwargs: Any) -> dict[str, Any]:
        """Return the tool's full arguments: the model's plus the hidden ones from ``state``."""

    async def prepare_tool_args(self, tool_name: str, tool_args: dict[str, Any], messages: Any,
                                state: State) -> dict[str, Any]:
        return await maybe_await(self.update_tool_args, tool_name, tool_args, messages, state)


__all__ = ["StatefulToolEnv"]
