"""Tuple-era MathRubric with its default parser, in a tuple-era MultiTurnEnv.

Written the way 0.1.x environments are: a ``MultiTurnEnv`` subclass with
``is_completed(messages, state)`` and ``env_response -> (messages, state)``,
scored by ``vf.MathRubric()`` with no arguments. The "echo" policy makes each
question the model's reply, so the rows probe how the default parser reads a
reply: with or without a think block, with or without ``\\boxed{}``.
"""

from datasets import Dataset

import verifiers as vf

ROWS = [
    {"question": "42", "answer": "42"},
    {"question": "\\boxed{42}", "answer": "42"},
    {"question": "<think>six sevens</think> 42", "answer": "42"},
    {"question": "<think>six sevens</think>\\boxed{42}", "answer": "42"},
    {"question": "<think>half</think>\\boxed{\\frac{1}{2}}", "answer": "0.5"},
    {"question": "<think>x</think>\\boxed{41}", "answer": "42"},
]


class OneAnswer(vf.MultiTurnEnv):
    async def is_completed(self, messages, state, **kwargs) -> bool:
        return messages[-1]["role"] == "assistant"

    async def env_response(self, messages, state, **kwargs):
        return [], state


def load_environment(**kwargs) -> vf.Environment:
    return OneAnswer(eval_dataset=Dataset.from_list(ROWS), rubric=vf.MathRubric(), **kwargs)
