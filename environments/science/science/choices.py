"""Multiple-choice questions: how they are shown to the model and how a reply's pick is read back.

A reply picks an option by its letter (``B``, ``(B)``, ``B.``, ``\\boxed{B}``, ``Answer: B``) or by the
option's own text (``Answer: 0.5 m/s``). What counts is the final answer: the last ``\\boxed{}``, else the
last ``answer is``/``Answer:`` line, else the whole reply after any ``</think>``. A reply that matches no
option, or names a letter the question does not have, picks nothing and scores 0.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

from verifiers.data.answers import extract_boxed_answer

LETTERS = string.ascii_uppercase

# "The answer is (B).", "Final answer: B", "**Answer:** B": the rest of the line after the marker.
_ANSWER_LINE = re.compile(r"answer\s*(?:is|:)\**\s*:?\s*(.+)", re.IGNORECASE)
# The whole candidate is a letter, maybe in brackets or followed by a full stop: "B", "(b)", "[C].", "D:".
_LETTER_ONLY = re.compile(r"[(\[]?([A-Za-z])[)\]]?[.:]?")
# A letter that labels what follows, as options are shown: "B. 0.5 m/s", "(C) it doubles", "D: none".
_LETTER_LABEL = re.compile(r"(?:\(([A-Z])\)|([A-Z])[.):])\s+\S")
_TEXT_WRAPPER = re.compile(r"\\(?:text|textbf|mathrm)\{([^{}]*)\}")


def format_question(question: str, choices: Sequence[str]) -> str:
    """The question, a blank line, then one ``X. option`` line per option."""
    options = [f"{letter}. {text.strip()}" for letter, text in zip(LETTERS, choices)]
    return "\n".join([question.strip(), "", *options])


def final_answer_text(reply: str) -> str:
    """The part of ``reply`` that states its final answer (see the module docstring)."""
    text = reply.rsplit("</think>", 1)[-1].strip()
    boxed = extract_boxed_answer(text, strict=True)
    if boxed:
        return boxed.strip()
    lines = _ANSWER_LINE.findall(text)
    return lines[-1].strip() if lines else text


def parse_choice(reply: str, choices: Sequence[str]) -> str | None:
    """The letter of the option ``reply`` picks, or None when it picks none.

    >>> parse_choice("Both hold, so the answer is (C).", ["1", "2", "3", "4"])
    'C'
    >>> parse_choice("Answer: 4", ["1", "2", "3", "4"]), parse_choice("Answer: E", ["1", "2", "3", "4"])
    ('D', None)
    """
    candidate = _TEXT_WRAPPER.sub(r"\1", final_answer_text(reply)).strip().strip("*`'\" ").strip()
    letters = LETTERS[: len(choices)]
    # The option's text first: an option may itself begin like a label ("A decrease in pressure").
    by_text = [letter for letter, text in zip(letters, choices) if _normalise(text) == _normalise(candidate)]
    if len(by_text) == 1:
        return by_text[0]
    only = _LETTER_ONLY.fullmatch(candidate)
    if only:
        letter = only.group(1).upper()
        return letter if letter in letters else None
    label = _LETTER_LABEL.match(candidate)
    if label:
        letter = label.group(1) or label.group(2)
        return letter if letter in letters else None
    return None


def _normalise(text: str) -> str:
    """Case, surrounding space and a final full stop do not make two options' texts differ."""
    return " ".join(text.split()).rstrip(".").casefold()
