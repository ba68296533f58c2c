"""arithmetic: add two two-digit numbers; the reward is 1.0 for exactly the sum.

The prompt is as short as a byte-level model can wish for (the user message ``37+45``, no
system prompt by default: with byte tokens an instruction would cost more than the problem)
and the reply is the bare number, so a tiny model learns the format at once and the
arithmetic gradually: SFT takes it to about half right, RL has room above.

Problems are every ordered pair of operands in ``[min_value, max_value]``, shuffled by the
seed: evaluation rows come first and never appear in training, and they depend only on
``num_eval_examples``, the range and the seed.
"""

from __future__ import annotations

import random

from datasets import Dataset

import verifiers as vf
from verifiers.errors import UsageError

SYSTEM_PROMPT = "Add the numbers. Reply with the sum only."
"""An instruction for models that need one (``system_prompt=SYSTEM_PROMPT``); off by default."""


def exact_match(completion: vf.Messages, answer: str, parser: vf.Parser) -> float:
    """1.0 when the reply, stripped of surrounding whitespace, is exactly the sum."""
    response = (parser.parse_answer(completion) or "").strip()
    return 1.0 if response == answer else 0.0


def all_problems(min_value: int, max_value: int, seed: int) -> list[tuple[int, int]]:
    """Every ordered pair of operands in the range, in the seed's order."""
    pairs = [(a, b) for a in range(min_value, max_value + 1) for b in range(min_value, max_value + 1)]
    random.Random(f"arithmetic/{seed}").shuffle(pairs)
    return pairs


def build_split(pairs: list[tuple[int, int]]) -> Dataset:
    """Rows with ``a+b`` as ``question`` and the sum as ``answer``."""
    return Dataset.from_dict(
        {
            "question": [f"{a}+{b}" for a, b in pairs],
            "answer": [str(a + b) for a, b in pairs],
            "task": ["arithmetic"] * len(pairs),
        }
    )


def load_environment(
    num_train_examples: int = 5000,
    num_eval_examples: int = 200,
    min_value: int = 10,
    max_value: int = 99,
    seed: int = 0,
    system_prompt: str | None = None,
) -> vf.Environment:
    """Build the arithmetic environment.

    Args:
        num_train_examples: rows in the training split (0 for none).
        num_eval_examples: rows in the evaluation split (0 for none).
        min_value, max_value: the operand range (two-digit by default).
        seed: picks and orders the problems; the same seed gives the same rows.
        system_prompt: a system message before every problem (none by default).
    """
    _check_args(num_train_examples, num_eval_examples, min_value, max_value, seed)
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise UsageError(f"system_prompt must be a string, got {system_prompt!r}")
    pairs = all_problems(min_value, max_value, seed)
    if num_train_examples + num_eval_examples > len(pairs):
        raise UsageError(
            f"asked for {num_train_examples + num_eval_examples} rows but the range has only {len(pairs)} problems"
        )
    eval_pairs = pairs[:num_eval_examples]
    train_pairs = pairs[num_eval_examples : num_eval_examples + num_train_examples]
    parser = vf.Parser()
    return vf.SingleTurnEnv(
        dataset=build_split(train_pairs) if train_pairs else None,
        eval_dataset=build_split(eval_pairs) if eval_pairs else None,
        system_prompt=system_prompt,
        parser=parser,
        rubric=vf.Rubric(funcs=[exact_match], weights=[1.0], parser=parser),
    )


def _check_args(num_train: int, num_eval: int, min_value: int, max_value: int, seed: int) -> None:
    for name, value in {
        "num_train_examples": num_train,
        "num_eval_examples": num_eval,
        "min_value": min_value,
        "max_value": max_value,
        "seed": seed,
    }.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise UsageError(f"{name} must be an integer, got {value!r}")
    if num_train < 0 or num_eval < 0:
        raise UsageError("num_train_examples and num_eval_examples must be 0 or more")
    if num_train == 0 and num_eval == 0:
        raise UsageError("num_train_examples and num_eval_examples are both 0; ask for at least one row")
    if min_value < 0 or max_value < min_value:
        raise UsageError(f"need 0 <= min_value <= max_value, got min_value={min_value}, max_value={max_value}")
