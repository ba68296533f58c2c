"""Reading the ``finish`` answer out of a rollout, and comparing it with the gold answer.

Answers are short: a version (``3.4``), a module name (``importlib.metadata``) or a count (``2``). Both
comparisons first normalise the text (:func:`normalise`); exact match asks for equality, token F1 gives
partial credit over the words and dotted names (:func:`answer_tokens`), so ``3.4`` is one token, never
``3`` and ``4``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import verifiers as vf
from verifiers.messages import to_tool_call

FINISH = "finish"
OPEN = "open"

_WRAPPERS = "`'\"*“”‘’ "
_LEADING_WORDS = re.compile(r"^(?:the answer is|answer:|python|version|module)\s+")
_TOKEN = re.compile(r"[a-z0-9_]+(?:\.[a-z0-9_]+)*")


def normalise(text: str) -> str:
    """Case, surrounding quotes or backticks, a final full stop, trailing ``()`` and a leading "Python" or
    "version" do not count: ``"Python 3.4."`` and ``"`lzma`"`` read as ``3.4`` and ``lzma``."""
    text = " ".join(text.split()).casefold().strip(_WRAPPERS)
    previous = None
    while previous != text:
        previous = text
        text = _LEADING_WORDS.sub("", text).rstrip(".").strip(_WRAPPERS)
        text = text.removesuffix("()")
    return text


def answer_tokens(text: str) -> list[str]:
    """The words and dotted names of ``text`` after :func:`normalise`."""
    return _TOKEN.findall(normalise(text))


def exact(prediction: str, gold: str) -> float:
    """1.0 when the two are equal after :func:`normalise`."""
    return float(normalise(prediction) == normalise(gold) != "")


def token_f1(prediction: str, gold: str) -> float:
    """The harmonic mean of the token precision and recall of ``prediction`` against ``gold``."""
    predicted, expected = answer_tokens(prediction), answer_tokens(gold)
    common = sum((Counter(predicted) & Counter(expected)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


def tool_calls(completion: Any) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """``(name, arguments)`` of every tool call the model made, in order; arguments are None when they are not a
    JSON object."""
    for message in completion if isinstance(completion, list) else []:
        role = message.get("role") if isinstance(message, dict) else getattr(message, "role", None)
        calls = (message.get("tool_calls") if isinstance(message, dict) else getattr(message, "tool_calls", None))
        if role != "assistant" or not calls:
            continue
        for raw in calls:
            call = to_tool_call(raw)
            try:
                arguments = json.loads(call.arguments or "{}")
            except (json.JSONDecodeError, TypeError):
                arguments = None
            yield call.name, arguments if isinstance(arguments, dict) else None


def finish_problem(arguments: dict[str, Any] | None) -> str | None:
    """What is wrong with a ``finish`` call's arguments, or None when it submits an answer."""
    if arguments is None:
        return "the arguments must be a JSON object with one key, answer"
    if set(arguments) != {"answer"}:
        return "finish takes exactly one argument, answer"
    answer = arguments["answer"]
    if not isinstance(answer, str):
        return f"answer must be a string, got {type(answer).__name__}"
    if not answer.strip():
        return "answer is empty: pass the short answer, e.g. finish(answer='3.4')"
    return None


def submitted_answer(completion: Any) -> str | None:
    """The answer of the first well-formed ``finish`` call (the one that ended the rollout), or None."""
    for name, arguments in tool_calls(completion):
        if name == FINISH and finish_problem(arguments) is None:
            assert arguments is not None
            return str(arguments["answer"]).strip()
    return None


def opened_doc_ids(completion: Any) -> set[str]:
    """The ``doc_id`` of every ``open`` call (as given, stripped)."""
    return {str(args["doc_id"]).strip() for name, args in tool_calls(completion)
            if name == OPEN and args and isinstance(args.get("doc_id"), str)}


class FinishParser(vf.Parser):
    """The rollout's answer is what it passed to ``finish``; a rollout that never finished has none."""

    def parse_answer(self, completion: vf.Messages) -> str | None:
        return submitted_answer(completion)


# -- reward functions (arguments are injected by name) -------------------------------------------------


def exact_match(completion: vf.Messages, answer: str, parser: vf.Parser) -> float:
    """1.0 when the ``finish`` answer equals the gold answer after normalisation (weight 1 without a judge)."""
    submitted = parser.parse_answer(completion)
    return exact(submitted, answer) if submitted else 0.0


def answer_f1(completion: vf.Messages, answer: str, parser: vf.Parser) -> float:
    """Token F1 of the ``finish`` answer against the gold answer (weight 0: reported, not rewarded)."""
    submitted = parser.parse_answer(completion)
    return token_f1(submitted, answer) if submitted else 0.0


def supporting_docs_opened(completion: vf.Messages, info: dict[str, Any]) -> float:
    """The share of the question's supporting documents the model opened (weight 0)."""
    supporting = list(info.get("supporting_doc_ids") or [])
    if not supporting:
        return 0.0
    opened = opened_doc_ids(completion)
    return sum(doc_id in opened for doc_id in supporting) / len(supporting)


def finished(completion: vf.Messages, parser: vf.Parser) -> float:
    """1.0 when the rollout ended with a well-formed ``finish`` call (weight 0)."""
    return float(parser.parse_answer(completion) is not None)
