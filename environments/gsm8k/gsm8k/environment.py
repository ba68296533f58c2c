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

SPLITS = ("train", "test")


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
    split: str = "test",
    num_examples: int = -1,
    system_prompt: str = BOXED_SYSTEM_PROMPT,
) -> vf.Environment:
    """Build the GSM8K environment.

    Args:
        split: ``"test"`` (1,319 rows) or ``"train"`` (7,473 rows); the rows
            serve both as the training and the evaluation dataset.
        num_examples: use the first ``num_examples`` rows (-1 = all).
        system_prompt: the instruction before each problem; the default asks
            for the final answer in ``\\boxed{}``, which the rubric reads.
    """
    if split not in SPLITS:
        raise UsageError(f"split must be one of {', '.join(SPLITS)}; got {split!r}")
    if not isinstance(num_examples, int) or isinstance(num_examples, bool) or num_examples == 0 or num_examples < -1:
        raise UsageError(f"num_examples must be -1 (all) or a positive integer; got {num_examples!r}")
    if not isinstance(system_prompt, str):
        raise UsageError(f"system_prompt must be a string; got {type(system_prompt).__name__}")
    dataset = build_dataset(split, num_examples)
    rubric = MathRubric()
    return vf.SingleTurnEnv(
        dataset=dataset,
        eval_dataset=dataset,
        system_prompt=system_prompt,
        parser=rubric.parser,
        rubric=rubric,
    )
