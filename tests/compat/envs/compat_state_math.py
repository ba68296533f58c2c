"""State-era MathRubric with its default parser, on a dataset given as a builder.

Written the way 0.3-era math environments are: ``vf.MathRubric()`` with no
arguments in a ``SingleTurnEnv`` whose dataset is ``lambda: Dataset...``. The
"echo" policy makes each question the model's reply, so the rows probe how the
default parser reads a reply: with or without a think block, with or without
``\\boxed{}``.
"""

from datasets import Dataset

import verifiers as vf

ROWS = [
    {"question": "42", "answer": "42"},
    {"question": "\\boxed{42}", "answer": "42"},
    {"question": "<think>six sevens</think> 42", "answer": "42"},
    {"question": "<think>six sevens</think>\\boxed{42}", "answer": "42"},
    {"question": "\\boxed{\\frac{1}{2}}", "answer": "0.5"},
    {"question": "<think>x</think>\\boxed{41}", "answer": "42"},
]


def load_environment(**kwargs) -> vf.Environment:
    return vf.SingleTurnEnv(dataset=lambda: Dataset.from_list(ROWS), rubric=vf.MathRubric(), **kwargs)
