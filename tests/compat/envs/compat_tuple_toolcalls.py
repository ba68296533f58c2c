"""Tuple-era ToolEnv that reads the model's tool calls and answers them itself.

Written the way 0.1.x tool environments do it: ``env_response`` reads each
call as the OpenAI object it was (``tool_call.function.name``,
``tool_call.function.arguments``, ``tool_call.id``) and returns
``(messages, state)`` from ``super()``; ``call_tool`` is overridden with
the four-argument signature 0.1.x calls, refuses one key itself and relies
on ``super().call_tool`` to turn a failing tool into a message. The scripted
model calls what the question lists, then answers with the tool results.
"""

from compat_toolkit import add, lookup
from datasets import Dataset

import verifiers as vf

# Each question is a JSON list of [tool name, raw arguments text]; all are well-formed, as 0.1.x
# itself crashes on arguments that are not JSON.
ROWS = [
    {"question": '[["lookup", "{\\"key\\": \\"color\\"}"], ["add", "{\\"a\\": 2, \\"b\\": 3}"]]',
     "answer": "OK teal|OK 5", "info": {"names": "lookup|add"}},
    {"question": '[["lookup", "{\\"key\\": \\"secret\\"}"]]', "answer": "DENIED", "info": {"names": "lookup"}},
    {"question": '[["lookup", "{\\"key\\": \\"missing\\"}"], ["add", "{\\"a\\": 40, \\"b\\": 2}"]]',
     "answer": "OK 'missing'|OK 42", "info": {"names": "lookup|add"}},
]


class AuditedToolEnv(vf.ToolEnv):
    async def env_response(self, messages, state, **kwargs) -> tuple[vf.Messages, vf.State]:
        state["seen_calls"] = [
            (tool_call.id, tool_call.function.name, tool_call.function.arguments)
            for tool_call in messages[-1]["tool_calls"]
        ]
        return await super().env_response(messages, state, **kwargs)

    async def call_tool(self, tool_name, tool_args, tool_call_id):
        if tool_name == "lookup" and tool_args.get("key") == "secret":
            return {"role": "tool", "content": "DENIED", "tool_call_id": tool_call_id}
        message = await super().call_tool(tool_name, tool_args, tool_call_id)
        return {**message, "content": f"OK {message['content']}"}


def correct(completion, answer, parser) -> float:
    return 1.0 if (parser.parse_answer(completion) or "") == answer else 0.0


def calls_read_as_objects(state, info) -> float:
    names = "|".join(name for _, name, _ in state.get("seen_calls", []))
    typed = all(isinstance(v, str) and v for call in state.get("seen_calls", []) for v in call)
    return 1.0 if names == info["names"] and typed else 0.0


def denied(completion) -> float:
    return float(sum(1 for m in completion if m["role"] == "tool" and m["content"] == "DENIED"))


def load_environment(max_turns: int = 4, **kwargs) -> vf.Environment:
    parser = vf.XMLParser(fields=["answer"])
    rubric = vf.Rubric(funcs=[correct, calls_read_as_objects, denied], weights=[1.0, 0.5, -0.25], parser=parser)
    return AuditedToolEnv(
        eval_dataset=Dataset.from_list(ROWS),
        tools=[lookup, add],
        system_prompt="Use the tools, then answer inside <answer> tags.",
        parser=parser,
        rubric=rubric,
        max_turns=max_turns,
        **kwargs,
    )
