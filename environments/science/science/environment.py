"""Science: four-option multiple-choice questions in physics, chemistry and biology (MMLU subsets).

A good answer ends with the letter of the one correct option (``Answer: B``), or with that option's text;
reasoning before it is welcome and not graded. The reward is 1.0 for the reference option and 0.0 for
anything else, a reply that picks no option included. With ``judge_model`` set, an OpenAI-compatible judge
model decides instead (the exact pick is still reported, as the weight-0 metric ``correct_choice``).

The data ships inside the package (``data/*.jsonl.gz``, MIT, see NOTICE). Train and eval rows are split by a
hash of the question text, so a question asked twice (MMLU repeats a few, sometimes with other options)
always lands on the same side and no prompt is in both splits.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
from collections.abc import Sequence
from importlib.resources import files
from typing import Any

from datasets import Dataset
from openai import AsyncOpenAI

import verifiers as vf
from science.choices import format_question, parse_choice
from verifiers.errors import UsageError

SUBJECTS = ("physics", "chemistry", "biology")

SYSTEM_PROMPT = (
    "Answer the multiple-choice question. Think it through if you need to, then end with a line "
    "'Answer: X', where X is the letter of the correct option."
)

JUDGE_PROMPT = """You are grading a reply to a multiple-choice question.

Question and options:
{question}

Letter of the correct option:
{answer}

Reply:
{response}

Does the reply's final answer choose the correct option, by its letter or by its text? \
Answer with one word: "yes" or "no"."""


def read_subject(subject: str) -> list[dict[str, Any]]:
    """The rows of one subject as bundled: ``id``, ``subject``, ``question``, ``choices``, ``answer``, ..."""
    data = files("science").joinpath("data", f"{subject}.jsonl.gz").read_bytes()
    return [json.loads(line) for line in gzip.decompress(data).decode("utf-8").splitlines() if line]


def in_eval_split(question: str, eval_share: float) -> bool:
    """Whether the question belongs to the eval split: a stable hash of its text, not its position."""
    digest = hashlib.sha256(" ".join(question.split()).casefold().encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < eval_share


def build_splits(
    subjects: Sequence[str], eval_share: float, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Train and eval rows (``question``, ``answer``, ``task``, ``info``), each shuffled with ``seed``."""
    train: list[dict[str, Any]] = []
    evaluation: list[dict[str, Any]] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for subject in subjects:
        for row in read_subject(subject):
            key = (row["question"], tuple(row["choices"]))
            if key in seen:  # an exact repeat (same question and options) would count twice
                continue
            seen.add(key)
            item = {
                "question": format_question(row["question"], row["choices"]),
                "answer": row["answer"],
                "task": "science",
                "info": {"id": row["id"], "subject": subject, "choices": list(row["choices"])},
            }
            (evaluation if in_eval_split(row["question"], eval_share) else train).append(item)
    rng = random.Random(seed)
    rng.shuffle(train)
    rng.shuffle(evaluation)
    return train, evaluation


def correct_choice(completion: vf.Messages, answer: str, info: dict[str, Any], parser: vf.Parser) -> float:
    """1.0 when the reply's final answer picks the reference option (by letter or text), else 0.0."""
    reply = parser.parse_answer(completion) or ""
    return float(parse_choice(reply, info["choices"]) == answer)


async def judged_correct(judge: Any, prompt: vf.Messages, completion: vf.Messages, answer: str, state: Any) -> float:
    """1.0 when the judge model's verdict starts with "yes"."""
    verdict = await judge(prompt, completion, answer, state)
    return 1.0 if verdict.strip().strip("*\"'. ").lower().startswith("yes") else 0.0


def make_rubric(judge_model: str | None, judge_base_url: str | None, judge_api_key_var: str) -> vf.Rubric:
    parser = vf.MaybeThinkParser()
    if judge_model is None:
        return vf.Rubric(funcs=[correct_choice], weights=[1.0], parser=parser)
    client = AsyncOpenAI(base_url=judge_base_url, api_key=os.environ.get(judge_api_key_var) or "none")
    rubric = vf.JudgeRubric(parser=parser, judge_client=client, judge_model=judge_model, judge_prompt=JUDGE_PROMPT)
    rubric.add_reward_func(judged_correct, weight=1.0)
    rubric.add_metric(correct_choice)
    return rubric


def load_environment(
    subjects: Sequence[str] = SUBJECTS,
    eval_share: float = 0.3,
    num_train_examples: int = -1,
    num_eval_examples: int = -1,
    seed: int = 0,
    system_prompt: str = SYSTEM_PROMPT,
    judge_model: str | None = None,
    judge_base_url: str | None = None,
    judge_api_key_var: str = "OPENAI_API_KEY",
) -> vf.Environment:
    """Build the science environment.

    Args:
        subjects: any of ``"physics"`` (733 rows), ``"chemistry"`` (347), ``"biology"`` (784).
        eval_share: the share of questions held out for evaluation (0 < share < 1); which ones is fixed by a
            hash of each question's text, so it does not depend on ``subjects`` or ``seed``.
        num_train_examples: the first N training rows after shuffling (-1 = all).
        num_eval_examples: the first N eval rows after shuffling (-1 = all).
        seed: the order of the rows in each split.
        system_prompt: the instruction before each question; the default asks for a final ``Answer: X`` line.
        judge_model: a judge model's name: score with its verdict instead of the exact pick.
        judge_base_url: the judge's OpenAI-compatible ``/v1`` URL (default: the OpenAI client's own).
        judge_api_key_var: the environment variable holding the judge's API key.
    """
    subjects = check_subjects(subjects)
    if isinstance(eval_share, bool) or not isinstance(eval_share, int | float) or not 0 < eval_share < 1:
        raise UsageError(f"eval_share must be a number between 0 and 1 (exclusive); got {eval_share!r}")
    for name, value in (("num_train_examples", num_train_examples), ("num_eval_examples", num_eval_examples)):
        if not isinstance(value, int) or isinstance(value, bool) or value == 0 or value < -1:
            raise UsageError(f"{name} must be -1 (all) or a positive integer; got {value!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise UsageError(f"seed must be an integer; got {seed!r}")
    if not isinstance(system_prompt, str):
        raise UsageError(f"system_prompt must be a string; got {type(system_prompt).__name__}")
    if judge_model is not None and (not isinstance(judge_model, str) or not judge_model.strip()):
        raise UsageError(f"judge_model must be a model name or None; got {judge_model!r}")
    if judge_base_url is not None and judge_model is None:
        raise UsageError("judge_base_url is set but judge_model is not: name the judge model too")
    train, evaluation = build_splits(subjects, float(eval_share), seed)
    if num_train_examples != -1:
        train = train[:num_train_examples]
    if num_eval_examples != -1:
        evaluation = evaluation[:num_eval_examples]
    rubric = make_rubric(judge_model, judge_base_url, judge_api_key_var)
    return vf.SingleTurnEnv(
        dataset=Dataset.from_list(train),
        eval_dataset=Dataset.from_list(evaluation),
        system_prompt=system_prompt,
        parser=rubric.parser,
        rubric=rubric,
    )


def check_subjects(subjects: Any) -> tuple[str, ...]:
    """``subjects`` as a tuple of known names; a single name is accepted for one subject."""
    chosen = (subjects,) if isinstance(subjects, str) else subjects
    if not isinstance(chosen, list | tuple) or not chosen:
        raise UsageError(f"subjects must be a non-empty list of {', '.join(SUBJECTS)}; got {subjects!r}")
    unknown = [s for s in chosen if s not in SUBJECTS]
    if unknown:
        raise UsageError(f"unknown subject(s) {unknown!r}: choose from {', '.join(SUBJECTS)}")
    return tuple(dict.fromkeys(chosen))
