"""The shipped questions and the honest train/eval split.

Each question (``data/questions.jsonl.gz``, made by ``build_corpus.py``) has its answer, the documents that
support it, and the pages its answer is read from (``answer_pages``: one for a bridge question, two for a
comparison). A page's side is fixed by a hash of its name (:func:`page_bucket`): a question is in the eval
split when every one of its answer pages is below ``eval_share``, in the training split when every one is
above, and left out when they disagree. So no page that answers an eval question answers a training
question, and since question texts are unique, no prompt is in both splits.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import random
from collections.abc import Sequence
from importlib.resources import files
from typing import Any

KINDS = ("bridge_version", "bridge_module", "comparison")
"""Question kinds: a bridge to an object's "New in version" note, a bridge to the one module added in a given
version, and the gap in minor versions between two objects."""


@functools.lru_cache(maxsize=1)
def read_questions() -> tuple[dict[str, Any], ...]:
    """The shipped questions: ``id``, ``kind``, ``question``, ``answer``, ``supporting_doc_ids``,
    ``answer_pages``, ``info``."""
    data = files("deep_research").joinpath("data", "questions.jsonl.gz").read_bytes()
    return tuple(json.loads(line) for line in gzip.decompress(data).decode("utf-8").splitlines() if line)


def page_bucket(page: str) -> float:
    """Where a page falls in [0, 1), from the sha256 of its name (``library/os``): stable across releases of
    the package and independent of the questions' order."""
    return int.from_bytes(hashlib.sha256(page.encode("utf-8")).digest()[:8], "big") / 2**64


def split_of(question: dict[str, Any], eval_share: float) -> str | None:
    """``"eval"``, ``"train"``, or None when the question's answer pages fall on different sides."""
    sides = {page_bucket(page) < eval_share for page in question["answer_pages"]}
    if len(sides) != 1:
        return None
    return "eval" if sides.pop() else "train"


def to_row(question: dict[str, Any]) -> dict[str, Any]:
    """A dataset row: the question as the prompt, the gold answer, and what the metrics need in ``info``."""
    return {
        "question": question["question"],
        "answer": question["answer"],
        "task": "deep-research",
        "info": {
            "id": question["id"],
            "kind": question["kind"],
            "supporting_doc_ids": list(question["supporting_doc_ids"]),
            "answer_pages": list(question["answer_pages"]),
        },
    }


def build_splits(
    kinds: Sequence[str], eval_share: float, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Train and eval rows of the chosen kinds, each shuffled with ``seed``."""
    train: list[dict[str, Any]] = []
    evaluation: list[dict[str, Any]] = []
    for question in read_questions():
        if question["kind"] not in kinds:
            continue
        side = split_of(question, eval_share)
        if side is not None:
            (evaluation if side == "eval" else train).append(to_row(question))
    rng = random.Random(seed)
    rng.shuffle(train)
    rng.shuffle(evaluation)
    return train, evaluation
