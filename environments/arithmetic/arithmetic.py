"""arithmetic: add two two-digit numbers; the reward is 1.0 for exactly the sum.

The prompt is as short as a byte-level model can wish for (the user message ``37+45``, no
system prompt by default: with byte tokens an instruction would cost more than the problem)
and the reply is the bare number, so a tiny model learns the format at once and the
arithmetic gradually: SFT takes it to about half right, RL has room above.

Problems are every ordered pair of operands in ``[min_value, max_value]``, shuffled by the
seed. Three splits, disjoint by *unordered* pair: ``a+b`` and its commuted twin ``b+a`` always
land in the same split, since a model that has learnt one has learnt the other. The test rows
(what ``vf-eval`` measures by default) come first in the seed's order and depend only on
``num_eval_examples``, the range and the seed; the validation rows (``eval_split="validation"``,
for choosing hyperparameters) come next; training takes what is left, both orders of each of
its pairs, and is the same whichever split is evaluated.
"""

from __future__ import annotations

import random

from datasets import Dataset

import verifiers as vf
from verifiers.errors import UsageError

SYSTEM_PROMPT = "Add the numbers. Reply with the sum only."
"""An instruction for models that need one (``system_prompt=SYSTEM_PROMPT``); off by default."""

Problem = tuple[int, int]
"""The operands ``(a, b)`` of ``a+b``."""


def exact_match(completion: vf.Messages, answer: str, parser: vf.Parser) -> float:
    """1.0 when the reply, stripped of surrounding whitespace, is exactly the sum."""
    response = (parser.parse_answer(completion) or "").strip()
    return 1.0 if response == answer else 0.0


def all_problems(min_value: int, max_value: int, seed: int) -> list[Problem]:
    """Every ordered pair of operands in the range, in the seed's order."""
    pairs = [(a, b) for a in range(min_value, max_value + 1) for b in range(min_value, max_value + 1)]
    random.Random(f"arithmetic/{seed}").shuffle(pairs)
    return pairs


def unordered(pair: Problem) -> Problem:
    """The operands in ascending order: ``a+b`` and its commuted twin ``b+a`` share this key."""
    a, b = pair
    return (a, b) if a <= b else (b, a)


def take_held_out(problems: list[Problem], count: int, exclude: set[Problem]) -> list[Problem]:
    """The first ``count`` problems in order whose unordered pair is in neither ``exclude`` nor an earlier pick.

    One order per pair: a held-out twin would only repeat its pair, so ``count`` rows cover ``count`` pairs.
    """
    picked: list[Problem] = []
    seen = set(exclude)
    for pair in problems:
        if len(picked) == count:
            break
        if unordered(pair) not in seen:
            seen.add(unordered(pair))
            picked.append(pair)
    return picked


def split_problems(
    problems: list[Problem], num_train: int, num_eval: int
) -> tuple[list[Problem], list[Problem], list[Problem]]:
    """``(train, test, validation)``: no unordered pair in two of them; ``UsageError`` if the range is too small."""
    num_pairs = len({unordered(p) for p in problems})
    if 2 * num_eval > num_pairs:
        raise UsageError(
            f"num_eval_examples={num_eval} needs {2 * num_eval} unordered pairs (test and validation) but the range "
            f"has only {num_pairs} (a+b and b+a are one pair); widen the range or ask for fewer examples"
        )
    test = take_held_out(problems, num_eval, exclude=set())
    validation = take_held_out(problems, num_eval, exclude={unordered(p) for p in test})
    held_out = {unordered(p) for p in test + validation}
    train_pool = [p for p in problems if unordered(p) not in held_out]
    if num_train > len(train_pool):
        raise UsageError(
            f"asked for {num_train} training rows but only {len(train_pool)} of the range's {len(problems)} problems "
            f"are left once the {len(held_out)} held-out unordered pairs (test and validation, each with its "
            "commuted twin) are set aside; widen the range or ask for fewer examples"
        )
    return train_pool[:num_train], test, validation


def build_split(pairs: list[Problem]) -> Dataset:
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
    eval_split: str = "test",
) -> vf.Environment:
    """Build the arithmetic environment.

    Args:
        num_train_examples: rows in the training split (0 for none).
        num_eval_examples: rows in the evaluation split (0 for none); the test and validation splits
            both have this many.
        min_value, max_value: the operand range (two-digit by default).
        seed: picks and orders the problems; the same seed gives the same rows.
        system_prompt: a system message before every problem (none by default).
        eval_split: the rows evaluated: ``"test"`` (held out: never trained or tuned on) or
            ``"validation"`` (as many rows, for choosing hyperparameters).

    Training holds neither split's pairs in either order, whichever split is evaluated, so
    tuning on validation and reporting test trains on the same rows.
    """
    _check_args(num_train_examples, num_eval_examples, min_value, max_value, seed)
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise UsageError(f"system_prompt must be a string, got {system_prompt!r}")
    if eval_split not in ("test", "validation"):
        raise UsageError(f"eval_split must be 'test' or 'validation', got {eval_split!r}")
    problems = all_problems(min_value, max_value, seed)
    train_pairs, test_pairs, validation_pairs = split_problems(problems, num_train_examples, num_eval_examples)
    eval_pairs = test_pairs if eval_split == "test" else validation_pairs
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
