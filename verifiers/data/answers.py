"""Pulling final answers out of worked solutions, and the prompts that ask for them."""

from __future__ import annotations

BOXED_SYSTEM_PROMPT = "Work through the problem step by step, then write your final answer inside \\boxed{}."

THINK_BOXED_SYSTEM_PROMPT = (
    "First reason about the problem inside <think>...</think> tags. "
    "After </think>, write your final answer inside \\boxed{}."
)

_BOXED = "\\boxed{"
_HASH = "####"


def extract_boxed_answer(text: str) -> str:
    """The content of the last ``\\boxed{...}`` in ``text``, braces matched; else ``text`` itself.

    An unclosed ``\\boxed{`` also gives back ``text`` unchanged.

    >>> extract_boxed_answer(r"so \\boxed{\\frac{1}{2}}.")
    '\\\\frac{1}{2}'
    >>> extract_boxed_answer("no box")
    'no box'
    """
    _require_str(text, "extract_boxed_answer")
    start = text.rfind(_BOXED)
    if start == -1:
        return text
    content_start = start + len(_BOXED)
    depth = 1
    for i in range(content_start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[content_start:i]
    return text


def extract_hash_answer(text: str) -> str | None:
    """The stripped text after ``####`` (GSM8K's answer marker), or ``None`` without one.

    Should ``####`` occur more than once, only the text up to the next one is taken.

    >>> extract_hash_answer("3 + 4 = 7\\n#### 7")
    '7'
    """
    _require_str(text, "extract_hash_answer")
    if _HASH not in text:
        return None
    return text.split(_HASH)[1].strip()


def _require_str(text: object, func: str) -> None:
    if not isinstance(text, str):
        raise TypeError(f"{func} expects a str, got {type(text).__name__}")
