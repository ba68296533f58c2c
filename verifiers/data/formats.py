"""Row converters: one source row (as published) to one example ``{"question", "answer", ...}``.

Each converter takes the raw row, its index in the source file and the
loader's seed (only multiple-choice sets that shuffle options use those two).
The converters accept the published schema of each set, so a user's local copy
of a set we do not bundle loads the same way as a bundled one.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from verifiers.data.answers import extract_boxed_answer, extract_hash_answer
from verifiers.errors import UsageError

Row = dict[str, Any]
Converter = Callable[[Row, int, int], Row]

LETTERS = "ABCDEFGHIJ"


def _field(row: Row, *keys: str) -> Any:
    """The first of ``keys`` present in ``row``; a missing one is a usage error naming them."""
    for key in keys:
        if key in row and row[key] is not None:
            return row[key]
    raise UsageError(f"a data row needs one of the fields {list(keys)}; it has {sorted(row)}")


def _lettered(question: str, options: list[Any]) -> str:
    if len(options) > len(LETTERS):
        raise UsageError(f"at most {len(LETTERS)} options are supported, got {len(options)}")
    lines = [f"{LETTERS[i]}: {option}" for i, option in enumerate(options)]
    return f"Question: {question}\n\n" + "\n".join(lines)


def _answer_letter(answer: Any) -> str:
    """An answer given as a letter or as a 0-based index, as a letter."""
    if isinstance(answer, int) and not isinstance(answer, bool):
        return LETTERS[answer]
    return str(answer).strip()


def plain(row: Row, index: int, seed: int) -> Row:
    """``question`` (or ``problem``/``prompt``) and ``answer``; ``info``/``task`` kept if present."""
    example = {
        "question": str(_field(row, "question", "problem", "prompt")),
        "answer": str(_field(row, "answer")),
    }
    for key in ("info", "task"):
        if key in row:
            example[key] = row[key]
    return example


def gsm8k(row: Row, index: int, seed: int) -> Row:
    """The number after ``####``; a row already holding just the number keeps it."""
    solution = str(_field(row, "answer"))
    # Without a marker extract_hash_answer gives the text back unstripped; the row's answer is stripped either way.
    return {"question": str(_field(row, "question")), "answer": extract_hash_answer(solution).strip()}


def math_problem(row: Row, index: int, seed: int) -> Row:
    """MATH problems: the ``answer`` field, else the boxed answer of the ``solution``."""
    answer = row.get("answer")
    if answer is None:
        answer = extract_boxed_answer(str(_field(row, "solution")))
    return {"question": str(_field(row, "problem", "question")), "answer": str(answer)}


def integer_answer(row: Row, index: int, seed: int) -> Row:
    """Competition sets with integer answers (AIME): digits only, leading zeros dropped."""
    raw = str(_field(row, "answer"))
    digits = "".join(c for c in raw if c.isdigit())
    return {"question": str(_field(row, "problem", "question")), "answer": str(int(digits)) if digits else raw}


def mmlu(row: Row, index: int, seed: int) -> Row:
    """MMLU-style rows (``choices`` or ``options`` list, answer letter or index) as lettered questions."""
    options = list(_field(row, "choices", "options"))
    example: Row = {
        "question": _lettered(str(_field(row, "question")), options),
        "answer": _answer_letter(_field(row, "answer")),
    }
    if "subject" in row:
        example["info"] = {"id": str(row.get("id", index)), "subject": str(row["subject"])}
    return example


def gpqa(row: Row, index: int, seed: int) -> Row:
    """GPQA rows: the correct and three incorrect answers in a seeded, per-row shuffled order."""
    options = [
        _field(row, "Correct Answer"),
        _field(row, "Incorrect Answer 1"),
        _field(row, "Incorrect Answer 2"),
        _field(row, "Incorrect Answer 3"),
    ]
    order = list(range(4))
    # Seeded per row, so a question's letters do not move when a subset is drawn.
    random.Random(f"{seed}:{index}").shuffle(order)
    shuffled = [str(options[i]).strip() for i in order]
    return {
        "question": _lettered(str(_field(row, "Question")).strip(), shuffled),
        "answer": LETTERS[order.index(0)],
    }


def openbookqa(row: Row, index: int, seed: int) -> Row:
    """OpenBookQA rows: labelled choices and ``answerKey``."""
    choices = _field(row, "choices")
    lines = [f"{label}. {text}" for label, text in zip(choices["label"], choices["text"])]
    question = f"Question: {_field(row, 'question_stem')}\n\nChoices:\n" + "\n".join(lines)
    return {"question": question, "answer": str(_field(row, "answerKey"))}


def code_verification(row: Row, index: int, seed: int) -> Row:
    """Coding problems whose answer is their verification info (kept as JSON text)."""
    info = _field(row, "verification_info")
    answer = info if isinstance(info, str) else json.dumps(info)
    return {"question": str(_field(row, "prompt")), "answer": answer}


def humaneval(row: Row, index: int, seed: int) -> Row:
    """HumanEval: the function stub to complete; the reference solution; tests in ``info``."""
    return {
        "question": str(_field(row, "prompt")),
        "answer": str(_field(row, "canonical_solution")),
        "info": {
            "task_id": str(_field(row, "task_id")),
            "entry_point": str(_field(row, "entry_point")),
            "test": str(_field(row, "test")),
        },
    }
