"""State-era ToolEnv that reads, rewrites and answers tool calls itself.

Written the way 0.3-era tool environments do it: ``env_response`` reads the
model's calls as flat ``vf.ToolCall`` objects (``.id``, ``.name``,
``.arguments``), builds rewritten ones (``vf.ToolCall(id=, name=,
arguments=)``) for ``super().env_response``; ``call_tool`` is overridden with
the originals' four-argument signature and raises for a forbidden key, so
the environment, not the tool, decides what the model is told. Some calls
are malformed (bad JSON, a list, an unknown tool): each must become a tool
message, never a crash. The scripted model calls what the question lists,
then answers with the tool results.
"""

from compat_toolkit import add, lookup
from datasets import Dataset

import verifiers as vf

# The model uses short names; the environment maps them to its tools.
ALIASES = {"get": "lookup", "plus": "add"}
# Each question is a JSON list of [tool name, raw arguments text] the scripted model sends as calls.
ROWS = [
    {"question": '[["get", "{\\"key\\": \\"color\\"}"], ["plus", "{\\"a\\": 2, \\"b\\": 3}"]]',
     "answer": "OK teal|OK 5", "info": {"names": "get|plus"}},
    {"question": '[["lookup", "{\\"key\\": \\"secret\\"}"]]', "answer": "", "info": {"names": "lookup"}},
    {"question": '[["add", "{\\"a\\": 1, \\"b\\": "], ["lookup", "{\\"key\\": \\"size\\"}"]]',
     "answer": "OK 7", "info": {"names": "add|lookup"}},
    {"question": '[["add", "[1, 2]"], ["nope", "{}"], ["get", "{\\"key\\": \\"missing\\"}"]]',
     "answer": "", "info": {"names": "add|nope|get"}},
]


class AuditedToolEnv(vf.ToolEnv):
    async def env_response(self, messages, state, **kwargs):
        calls = messages[-1].tool_calls
        state["seen_calls"] = [(call.id, call.name, call.arguments) for call in calls]
        renamed = [
            vf.ToolCall(id=call.id, name=ALIASES.get(call.name, call.name), arguments=call.arguments)
            for call in calls
        ]
        rewritten = vf.AssistantMessage(content=messages[-1].content, tool_calls=renamed)
        return await super().env_response(messages[:-1] + [rewritten], state, **kwargs)

    async def call_tool(self, tool_name, tool_args, tool_call_id):
        if tool_name == "lookup" and tool_args.get("key") == "secret":
            raise PermissionError("secret is off limits")
        message = await super().call_tool(tool_name, tool_args, tool_call_id)
        return vf.ToolMessage(role="tool", content=f"OK {message.content}", tool_call_id=tool_call_id)


def _tool_contents(completion) -> list:
    return [m["content"] for m in completion if m["role"] == "tool"]


def correct(completion, answer, parser) -> float:
    # Only the successful results are compared: the wording of an error differs between SDKs.
    parsed = parser.parse_answer(completion) or ""
    return 1.0 if [p for p in parsed.split("|") if p.startswith("OK ")] == [p for p in answer.split("|") if p] else 0.0


def calls_read_flat(state, info) -> float:
    names = "|".join(name for _, name, _ in state.get("seen_calls", []))
    typed = all(isinstance(v, str) and v for call in state.get("seen_calls", []) for v in call)
    return 1.0 if names == info["names"] and typed else 0.0


def ok_results(completion) -> float:
    return float(sum(1 for c in _tool_contents(completion) if str(c).startswith("OK ")))


def error_results(completion) -> float:
    return float(sum(1 for c in _tool_contents(completion) if not str(c).startswith("OK ")))


def denied_by_override(completion) -> float:
    return float(sum(1 for c in _tool_contents(completion) if c == "ERROR PermissionError: secret is off limits"))


def load_environment(max_turns: int = 4, **kwargs) -> vf.Environment:
    parser = vf.XMLParser(fields=["answer"])
    rubric = vf.Rubric(funcs=[correct, calls_read_flat], weights=[1.0, 0.5], parser=parser)
    rubric.add_reward_func(error_results, weight=-0.25)
    rubric.add_metric(ok_results)
    rubric.add_metric(denied_by_override)
    return AuditedToolEnv(
        eval_dataset=Dataset.from_list(ROWS),
        tools=[lookup, add],
        system_prompt="Use the tools, then answer inside <answer> tags.",
        parser=parser,
        rubric=rubric,
        max_turns=max_turns,
        error_formatter=lambda e: f"ERROR {type(e).__name__}: {e}",
        **kwargs,
    )
