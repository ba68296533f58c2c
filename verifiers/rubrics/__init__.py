"""Rubrics: weighted reward functions that score rollouts.

Names load on first use: worker processes of the math-verify pool import
:mod:`verifiers.rubrics.math_verify_pool`, and must not pay for the OpenAI
client or the dataset machinery that the other rubrics pull in.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from verifiers.rubrics.judge_rubric import DEFAULT_JUDGE_PROMPT, JudgeError, JudgeRubric
    from verifiers.rubrics.length_penalty import LengthPenaltyRubric, add_length_instruction
    from verifiers.rubrics.math_rubric import MathRubric
    from verifiers.rubrics.rubric import Rubric
    from verifiers.rubrics.rubric_group import RubricGroup
    from verifiers.rubrics.tool_rubric import ToolRubric

_MODULES = {
    "DEFAULT_JUDGE_PROMPT": "judge_rubric",
    "JudgeError": "judge_rubric",
    "JudgeRubric": "judge_rubric",
    "LengthPenaltyRubric": "length_penalty",
    "add_length_instruction": "length_penalty",
    "MathRubric": "math_rubric",
    "Rubric": "rubric",
    "RubricGroup": "rubric_group",
    "ToolRubric": "tool_rubric",
}


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)


__all__ = list(_MODULES)
