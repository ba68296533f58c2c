"""GSM8K: grade-school math word problems with a numeric final answer.

The data ships inside the package (``data/*.jsonl.gz``, MIT, see NOTICE), so
loading never touches the network. The reference answer is the number after
``####`` in each worked solution; the model answers in ``\\boxed{}`` and
:class:`~verifiers.MathRubric` checks it for mathematical equivalence.
"""

from __future__ import annotations

import gzip
import json
from importlib.resources import files
from typing import Any

from datasets import Dataset

import verifiers as vf
from verifiers.data.answers import BOXED_SYSTEM_PROMPT, extract_hash_answer
from verifiers.errors import UsageError
from verifiers.rubrics.math_rubric import MathRubric


def read_split(split: str) -> list[dict[str, Any]]:
    """The raw rows of one split, as in the upstream JSONL file."""
    data = files("gsm8k").joinpath("data", f"{split}.jsonl.gz").read_bytes()
    return [json.loads(line) for line in gzip.decompress(data).decode("utf-8").splitlines() if line]


def final_answer(solution: str) -> str:
    """The number after ``####``, without thousands separators (``"1,080"`` → ``"1080"``)."""
    if "####" not in solution:
        raise ValueError(f"no '####' answer in solution: {solution[-80:]!r}")
    return extract_hash_answer(solution).replace(",", "")


def build_dataset(split: str, num_examples: int = -1) -> Dataset:
    """Rows ``question``/``answer``/``task`` of ``split``; the first ``num_examples`` (-1 = all)."""
    rows = read_split(split)
    if num_examples != -1:
        rows = rows[:num_examples]
    return Dataset.from_dict(
        {
            "question": [row["question"] for row in rows],
            "answer": [final_answer(row["answer"]) for row in rows],
            "task": ["gsm8k"] * len(rows),
        }
    )


def load_environment(
    num_examples: int = -1,
    num_train_examples: int = -1,
    system_prompt: str = BOXED_SYSTEM_PROMPT,
) -> vf.Environment:
    """Build the GSM8K environment: trained on GSM8K's train split, evaluated on its test split.

    Args:
        num_examples: evaluate on the first ``num_examples`` test rows (-1 = all 1,319).
        num_train_examples: train on the first ``num_train_examples`` train rows (-1 = all 7,473).
        system_prompt: the instruction before each problem; the default asks
            for the final answer in ``\\boxed{}``, which the rubric reads.
    """
    for name, value in (("num_examples", num_examples), ("num_train_examples", num_train_examples)):
        if not isinstance(value, int) or isinstance(value, bool) or value == 0 or value < -1:
            raise UsageError(f"{name} must be -1 (all) or a positive integer; got {value!r}")
    if not isinstance(system_prompt, str):
        raise UsageError(f"system_prompt must be a string; got {type(system_prompt).__name__}")
    rubric = MathRubric()
    return vf.SingleTurnEnv(
        dataset=build_dataset("train", num_train_examples),
        eval_dataset=build_dataset("test", num_examples),
        system_prompt=system_prompt,
        parser=rubric.parser,
        rubric=rubric,
    )
