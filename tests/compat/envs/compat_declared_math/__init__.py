"""A plain ``SingleTurnEnv`` scored by ``vf.MathRubric()``: code that names no era.

The same source scores differently on the two originals; the ``pyproject.toml`` beside this package
declares ``verifiers>=0.1.3,<0.1.8``, so it was written for the tuple era and must score as 0.1.x does.
"""

from compat_tuple_math import ROWS
from datasets import Dataset

import verifiers as vf


def load_environment(**kwargs) -> vf.Environment:
    return vf.SingleTurnEnv(eval_dataset=Dataset.from_list(ROWS), rubric=vf.MathRubric(), **kwargs)
