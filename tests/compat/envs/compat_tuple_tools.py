"""Tuple-era ToolEnv: one sync and one async python tool, scored with ToolRubric.

Written the way 0.1.x public tool environments are: plain typed functions with
docstrings become tools, ``ToolRubric`` counts the calls, and a correctness
reward is added on top. The scripted server's "tools" policy calls the offered
tools and then answers, so the tool calls and results are deterministic.
"""

import asyncio

from datasets import Dataset

import verifiers as vf

CAPITALS = {"france": "Paris", "japan": "Tokyo", "peru": "Lima"}


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first integer.
        b: The second integer.
    """
    return a + b


async def capital(country: str) -> str:
    """Look up the capital city of a country.

    Args:
        country: Country name, lower case.
    """
    await asyncio.sleep(0)
    return CAPITALS[country]


# Each question tells the scripted model which tools to call with which arguments.
ROWS = [
    {"question": '{"add": {"a": 2, "b": 3}, "capital": {"country": "france"}}', "answer": "5|Paris"},
    {"question": '{"add": {"a": 40, "b": 2}}', "answer": "42"},
    {"question": '{"capital": {"country": "atlantis"}, "add": {"a": 1, "b": 1}}', "answer": "2"},
    {"question": "{}", "answer": ""},
]


def load_environment(max_turns: int = 4, **kwargs) -> vf.Environment:
    parser = vf.XMLParser(fields=["answer"])
    tools = [add, capital]

    def tool_results_used(completion, answer) -> float:
        # The final answer should repeat what the tools returned.
        final = parser.parse_answer(completion) or ""
        return 1.0 if answer in final else 0.0

    def tool_errors(completion) -> float:
        errors = [m for m in completion if m["role"] == "tool" and "atlantis" in m["content"]]
        return float(len(errors))

    rubric = vf.ToolRubric(tools=tools)
    rubric.add_reward_func(tool_results_used, weight=1.0)
    rubric.add_reward_func(tool_errors, weight=-0.5)
    return vf.ToolEnv(
        eval_dataset=Dataset.from_list(ROWS),
        tools=tools,
        max_turns=max_turns,
        parser=parser,
        rubric=rubric,
        system_prompt="Use the tools, then answer inside <answer> tags.",
        **kwargs,
    )
