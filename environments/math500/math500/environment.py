"""MATH-500: 500 competition problems (the PRM800K test subset of MATH).

The data ships inside the package (``data/test.jsonl.gz``, MIT, see NOTICE),
so loading never touches the network. Reference answers are LaTeX
(``\\frac{14}{3}``, ``\\left( 3, \\frac{\\pi}{2} \\right)``), so the model
answers in ``\\boxed{}`` and :class:`~verifiers.MathRubric` checks mathematical
equivalence rather than string equality.
"""

from __future__ import annotations

import gzip
import json
from importlib.resources import files
from typing import Any

from datasets import Dataset

import verifiers as vf
from verifiers.data.answers import BOXED_SYSTEM_PROMPT
from verifiers.errors import UsageError
from verifiers.rubrics.math_rubric import MathRubric


def read_rows() -> list[dict[str, Any]]:
    """The raw rows, as in the upstream JSONL file."""
    data = files("math500").joinpath("data", "test.jsonl.gz").read_bytes()
    return [json.loads(line) for line in gzip.decompress(data).decode("utf-8").splitlines() if line]


def build_dataset(num_examples: int = -1) -> Dataset:
    """Rows ``question``/``answer``/``task``/``info``; the first ``num_examples`` (-1 = all).

    ``info`` keeps ``subject``, ``level`` (1-5) and ``unique_id`` for per-group analysis.
    """
    rows = read_rows()
    if num_examples != -1:
        rows = rows[:num_examples]
    return Dataset.from_dict(
        {
            "question": [row["problem"] for row in rows],
            "answer": [row["answer"] for row in rows],
            "task": ["math500"] * len(rows),
            "info": [
                {"subject": row["subject"], "level": row["level"], "unique_id": row["unique_id"]} for row in rows
            ],
        }
    )


def load_environment(
    num_examples: int = -1, system_prompt: str = BOXED_SYSTEM_PROMPT, train_on_eval: bool = False
) -> vf.Environment:
    """Build the MATH-500 environment: an evaluation benchmark, with no training split of its own.

    Args:
        num_examples: use the first ``num_examples`` rows (-1 = all 500).
        system_prompt: the instruction before each problem; the default asks
            for the final answer in ``\\boxed{}``, which the rubric reads.
        train_on_eval: also offer the 500 test rows as the training dataset. Off by default, so a
            trainer pointed at MATH-500 by mistake refuses instead of training on what it is scored on.
    """
    if not isinstance(num_examples, int) or isinstance(num_examples, bool) or num_examples == 0 or num_examples < -1:
        raise UsageError(f"num_examples must be -1 (all) or a positive integer; got {num_examples!r}")
    if not isinstance(system_prompt, str):
        raise UsageError(f"system_prompt must be a string; got {type(system_prompt).__name__}")
    if not isinstance(train_on_eval, bool):
        raise UsageError(f"train_on_eval must be true or false; got {train_on_eval!r}")
    dataset = build_dataset(num_examples)
    rubric = MathRubric()
    return vf.SingleTurnEnv(
        dataset=dataset if train_on_eval else None,
        eval_dataset=dataset,
        system_prompt=system_prompt,
        parser=rubric.parser,
        rubric=rubric,
    )
