"""Tuple-era MathRubric assigned after ``super().__init__()`` (as many 0.1.x environments do).

The same rows and environment as ``compat_tuple_math``, but the rubric is set on the built
environment, so it must learn the environment's era from the assignment itself.
"""

from compat_tuple_math import ROWS
from datasets import Dataset

import verifiers as vf


class OneAnswerLate(vf.MultiTurnEnv):
    def __init__(self, **kwargs):
        super().__init__(eval_dataset=Dataset.from_list(ROWS), **kwargs)
        self.rubric = vf.MathRubric()

    async def is_completed(self, messages, state, **kwargs) -> bool:
        return messages[-1]["role"] == "assistant"

    async def env_response(self, messages, state, **kwargs):
        return [], state


def load_environment(**kwargs) -> vf.Environment:
    return OneAnswerLate(**kwargs)
