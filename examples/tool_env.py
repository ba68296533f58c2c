"""A tool environment: the model may call a Python function, and the environment runs the calls.

``ToolEnv`` turns ``days_between`` (its signature and docstring) into the tool schema the model is offered,
runs each call the model makes and hands back the result, until the model answers without calling a tool.
Reward: 1 for the right day count (the rows carry hand-checked answers); ToolEnv adds weight-0 metrics of its
own, ``total_tool_calls`` and ``days_between_calls``. Offline, the scripted model calls the tool once with the
question's two dates, then answers with what the tool said.

    .venv/bin/python examples/tool_env.py
    .venv/bin/python examples/tool_env.py --base-url http://127.0.0.1:8000/v1 --model my-model
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from datasets import Dataset
from model_server import last_reply, run, tool_call

import verifiers as vf
from verifiers.testing import Reply, ScriptedRequest

ROWS = [  # (start, end, days): counted by hand, leap years included
    ("2024-01-15", "2024-03-01", 46),
    ("2023-12-25", "2024-01-01", 7),
    ("2024-02-01", "2025-02-01", 366),
    ("2025-06-30", "2025-09-01", 63),
]


def days_between(start: str, end: str) -> int:
    """Count the days from one date to another.

    Args:
        start: the first date, as YYYY-MM-DD.
        end: the second date, as YYYY-MM-DD.
    """
    return (dt.date.fromisoformat(end) - dt.date.fromisoformat(start)).days


def make_env() -> vf.ToolEnv:
    questions = [{"question": f"How many days are there from {start} to {end}?", "answer": str(days)}
                 for start, end, days in ROWS]
    dataset = Dataset.from_list(questions)

    def correct_days(completion: vf.Messages, answer: str) -> float:
        return float(last_reply(completion) == answer)

    return vf.ToolEnv(tools=[days_between], dataset=dataset, eval_dataset=dataset, max_turns=4,
                      rubric=vf.Rubric(funcs=[correct_days]),
                      system_prompt="Use the tools you are given. Answer with the number only.")


def use_the_tool(request: ScriptedRequest) -> Reply:
    """The scripted model: one call with the question's dates, then the tool's answer as its own."""
    results = [m for m in request.messages if m["role"] == "tool"]
    if results:
        return Reply(str(results[-1]["content"]).strip())
    start, end = re.findall(r"\d{4}-\d{2}-\d{2}", request.last_user_text)
    return tool_call("days_between", {"start": start, "end": end}, request.assistant_turns)


def describe(output: dict[str, Any]) -> str:
    question = output["prompt"][-1]["content"]
    calls = output["metrics"].get("days_between_calls", 0.0)
    return f"{question} -> {last_reply(output['completion'])} ({calls:.0f} tool call(s))"


def main() -> None:
    run(make_env, use_the_tool, describe, __doc__)


if __name__ == "__main__":
    main()
