"""Pulling final answers out of worked solutions, and the prompts that ask for them."""

from __future__ import annotations

BOXED_SYSTEM_PROMPT = "Work through the problem step by step, then write your final answer inside \\boxed{}."

THINK_BOXED_SYSTEM_PROMPT = (
    "First reason about the problem inside <think>...</think> tags. "
    "After </think>, write your final answer inside \\boxed{}."
)

_BOXED = "\\boxed{"
_HASH = "####"


def extract_boxed_answer(text: str, strict: bool = False) -> str:
    """The content of the last ``\\boxed{...}`` in ``text``, braces matched.

    When ``text`` holds no complete box (none at all, or one never closed), what
    comes back depends on ``strict``: by default ``text`` unchanged, which lets
    unboxed answers through to be compared as they are; with ``strict=True`` the
    empty string, leaving a reply that skipped the box nothing to be graded on.

    >>> extract_boxed_answer(r"so \\boxed{\\frac{1}{2}}.")
    '\\\\frac{1}{2}'
    >>> extract_boxed_answer("no box"), extract_boxed_answer("no box", strict=True)
    ('no box', '')
    """
    _require_str(text, "extract_boxed_answer")
    if not isinstance(strict, bool):
        raise TypeError(f"extract_boxed_answer: strict must be a bool, got {type(strict).__name__}")
    content = _last_boxed_content(text)
    if content is None:
        return "" if strict else text
    return content


def _last_boxed_content(text: str) -> str | None:
    """What the last ``\\boxed{`` encloses, or None when there is none or it never closes."""
    start = text.rfind(_BOXED)
    if start == -1:
        return None
    content_start = start + len(_BOXED)
    depth = 1
    for i in range(content_start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[content_start:i]
    return None


def extract_hash_answer(text: str) -> str:
    """The stripped text after ``####`` (GSM8K's answer marker); without one, ``text`` unchanged.

    Should ``####`` occur more than once, only the text up to the next one is
    taken. Text without the marker comes back as it is (not stripped), as in
    both classic releases, so the function can extract from a model's reply
    as well as from a reference solution; test ``"####" in text`` first where
    a missing marker is an error.

    >>> extract_hash_answer("3 + 4 = 7\\n#### 7"), extract_hash_answer("7")
    ('7', '7')
    """
    _require_str(text, "extract_hash_answer")
    _, marker, after = text.partition(_HASH)
    if not marker:
        return text
    answer, _, _ = after.partition(_HASH)
    return answer.strip()


def _require_str(text: object, func: str) -> None:
    if not isinstance(text, str):
        raise TypeError(f"{func} expects a str, got {type(text).__name__}")
