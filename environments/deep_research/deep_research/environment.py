"""Deep research: answer multi-hop questions about the Python 3.11 documentation with search and open tools.

The model gets a question and three tools over the shipped corpus (the Python 3.11 library reference,
language reference and tutorial, as Debian's ``python3.11-doc`` packages them; see NOTICE):

* ``search(query)``: the best documents for the query by SQLite FTS5's bm25, each with its id, title and a
  snippet;
* ``open(doc_id)``: a document's text (at most ``max_open_chars`` characters, with a note when cut);
* ``finish(answer)``: submits the answer and ends the rollout.

Every question needs two documents: a bridge question names an object only through another section that
mentions it ("the section ... mentions exactly one name from the `shutil` module: in which version was it
added?"), a module question asks which of the modules a section refers to was added in a given version, and a
comparison asks how many minor versions apart two objects were added.

**A good answer** is the bare fact, passed to ``finish``: a version such as ``3.4``, a module name such as
``importlib.metadata``, or a number such as ``2``. Case, quotes or backticks around it, a final full stop and
a leading "Python" do not matter; anything else does (``3.4`` is not ``3.4.0``, and "It was added in 3.4" is
not exact). The reward is 1.0 for an exact match and 0.0 otherwise, including a rollout that never calls
``finish`` (it answers in plain text, or runs out of ``max_turns``); token F1 is reported as a weight-0
metric for partial credit, and so is the share of the question's supporting documents the model opened.
With ``judge_model`` set, an OpenAI-compatible judge model decides whether the submitted answer matches the
gold one instead (exact match becomes a weight-0 metric).

Nothing is downloaded: the corpus and the questions ship inside the package (``data/``), and the index is
built in memory at first use. Train and eval questions are split by a hash of the page their answer is read
from, so no eval answer page is a training answer page, and no prompt is in both splits.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from datasets import Dataset
from openai import AsyncOpenAI

import verifiers as vf
from deep_research.corpus import SearchIndex, default_index
from deep_research.questions import KINDS, build_splits
from deep_research.scoring import (
    FinishParser,
    answer_f1,
    exact_match,
    finish_problem,
    finished,
    submitted_answer,
    supporting_docs_opened,
)
from verifiers.errors import UsageError

SYSTEM_PROMPT = """You answer questions about the Python 3.11 documentation by researching it with tools.

- search(query): lists the documents that best match the query, each with its doc_id, title and a snippet.
- open(doc_id): shows the text of one document (a section of a documentation page).
- finish(answer): submits your final answer and ends the task.

Each question needs facts from more than one document. Search, open the documents you need, and check every \
fact in their text before you answer. Call finish with the short answer only (a version number such as 3.4, a \
module name, or a number), without any explanation."""

JUDGE_PROMPT = """You are grading the answer to a question about the Python 3.11 documentation.

Question:
{question}

Reference answer:
{answer}

Submitted answer:
{response}

Does the submitted answer state the same fact as the reference answer? Wording and formatting do not matter; a \
different version, name or number does. Answer with one word: "yes" or "no"."""


class ResearchTools:
    """The model's tools over one index. Each returns text: a bad argument is answered with an ``Error: ...``
    string the model can act on, never an exception that would end the rollout."""

    def __init__(self, index: SearchIndex, search_results: int, max_open_chars: int) -> None:
        self.index = index
        self.search_results = search_results
        self.max_open_chars = max_open_chars

    def search(self, query: str) -> str:
        """Search the Python 3.11 documentation; lists the best documents with their doc_id, title and a snippet.

        Args:
            query: words to look for, e.g. "shutil copyfile added" or "os.scandir".
        """
        if not isinstance(query, str):
            return f"Error: query must be a string, got {type(query).__name__}."
        try:
            hits = self.index.search(query, self.search_results)
        except ValueError:
            return "Error: the query has no words to search for; pass some words, e.g. search(query='os.listdir')."
        if not hits:
            return f"No document matches {query!r}. Try other or fewer words."
        lines = []
        for number, hit in enumerate(hits, 1):
            lines.append(f"{number}. doc_id: {hit.doc_id}\n   title: {hit.title}\n   snippet: {hit.snippet}")
        return "\n".join(lines)

    def open(self, doc_id: str) -> str:
        """Show the text of one document.

        Args:
            doc_id: a document's id exactly as search lists it, e.g. "library/os#files-and-directories".
        """
        if not isinstance(doc_id, str) or not doc_id.strip():
            return "Error: doc_id must be a document's id as search lists it, e.g. 'library/shutil'."
        document = self.index.get(doc_id.strip())
        if document is None:
            similar = self.index.similar_ids(doc_id.strip())
            hint = f" Did you mean: {', '.join(similar)}?" if similar else " Use search to find documents."
            return f"Error: no document has the id {doc_id.strip()!r}.{hint}"
        text = document.text
        header = f"doc_id: {document.doc_id}\ntitle: {document.title}\n\n"
        if len(text) <= self.max_open_chars:
            return header + text
        return (header + text[: self.max_open_chars] + f"\n\n[Cut: this shows the first {self.max_open_chars} of "
                f"{len(text)} characters of the document; search with more specific words for the rest.]")

    def finish(self, answer: str) -> str:
        """Submit your final answer and end the task.

        A well-formed call ends the rollout before this runs (see ``DeepResearchEnv``); the model hears from
        it only when the answer is malformed.

        Args:
            answer: the short answer only, e.g. "3.4", a module name, or a number.
        """
        problem = finish_problem({"answer": answer})
        return f"Error: {problem}." if problem else f"Answer submitted: {answer.strip()}"


class DeepResearchEnv(vf.ToolEnv):
    """A ``ToolEnv`` whose rollout ends as soon as the model calls ``finish`` with a well-formed answer.

    The call is the rollout's last message (the budget is model turns, so a ``finish`` in the last allowed turn
    counts too), and its answer is kept in ``state["final_answer"]``. A malformed ``finish`` call does not end
    the rollout: the tool answers it with what was wrong.
    """

    @vf.stop(priority=50)  # before max_turns_reached: a finish in the last turn is an answer, not a timeout
    async def called_finish(self, state: vf.State) -> bool:
        if not state["trajectory"]:
            return False
        answer = submitted_answer(state["trajectory"][-1]["completion"])
        if answer is None:
            return False
        state["final_answer"] = answer
        return True


async def judged_correct(judge: Any, prompt: vf.Messages, completion: vf.Messages, answer: str, state: Any,
                         parser: vf.Parser) -> float:
    """1.0 when the judge says the ``finish`` answer states the gold fact; 0.0 without a ``finish`` answer."""
    if parser.parse_answer(completion) is None:
        return 0.0
    verdict = await judge(prompt, completion, answer, state)
    return 1.0 if verdict.strip().strip("*\"'. ").lower().startswith("yes") else 0.0


def make_rubric(judge_model: str | None, judge_base_url: str | None, judge_api_key_var: str) -> vf.Rubric:
    parser = FinishParser()
    if judge_model is None:
        rubric = vf.Rubric(funcs=[exact_match], weights=[1.0], parser=parser)
    else:
        client = AsyncOpenAI(base_url=judge_base_url, api_key=os.environ.get(judge_api_key_var) or "none")
        rubric = vf.JudgeRubric(parser=parser, judge_client=client, judge_model=judge_model,
                                judge_prompt=JUDGE_PROMPT)
        rubric.add_reward_func(judged_correct, weight=1.0)
        rubric.add_metric(exact_match)
    for metric in (answer_f1, supporting_docs_opened, finished):
        rubric.add_metric(metric)
    return rubric


def load_environment(
    kinds: Sequence[str] = KINDS,
    eval_share: float = 0.3,
    num_train_examples: int = -1,
    num_eval_examples: int = -1,
    seed: int = 0,
    max_turns: int = 10,
    search_results: int = 5,
    max_open_chars: int = 8000,
    system_prompt: str = SYSTEM_PROMPT,
    judge_model: str | None = None,
    judge_base_url: str | None = None,
    judge_api_key_var: str = "OPENAI_API_KEY",
) -> vf.Environment:
    """Build the deep-research environment.

    Args:
        kinds: question kinds to include, any of ``"bridge_version"``, ``"bridge_module"``, ``"comparison"``.
        eval_share: the share of answer pages held out for evaluation (0 < share < 1); which pages is fixed by
            a hash of each page's name, so it does not depend on ``kinds`` or ``seed``.
        num_train_examples: the first N training rows after shuffling (-1 = all).
        num_eval_examples: the first N eval rows after shuffling (-1 = all).
        seed: the order of the rows in each split.
        max_turns: model turns per rollout at most (a rollout that has not called ``finish`` by then scores 0).
        search_results: documents one ``search`` lists.
        max_open_chars: characters of a document ``open`` shows; every document a question relies on fits in
            the default 8000 (a lower value may cut the fact a question needs).
        system_prompt: the instruction before each question; the default describes the tools and the answer.
        judge_model: a judge model's name: reward its verdict on the submitted answer instead of exact match.
        judge_base_url: the judge's OpenAI-compatible ``/v1`` URL (default: the OpenAI client's own).
        judge_api_key_var: the environment variable holding the judge's API key.
    """
    chosen = check_kinds(kinds)
    if isinstance(eval_share, bool) or not isinstance(eval_share, int | float) or not 0 < eval_share < 1:
        raise UsageError(f"eval_share must be a number between 0 and 1 (exclusive); got {eval_share!r}")
    for name, value in (("num_train_examples", num_train_examples), ("num_eval_examples", num_eval_examples)):
        if not isinstance(value, int) or isinstance(value, bool) or value == 0 or value < -1:
            raise UsageError(f"{name} must be -1 (all) or a positive integer; got {value!r}")
    for name, value, least in (("seed", seed, None), ("max_turns", max_turns, 2),
                               ("search_results", search_results, 1), ("max_open_chars", max_open_chars, 200)):
        if not isinstance(value, int) or isinstance(value, bool) or (least is not None and value < least):
            raise UsageError(f"{name} must be an integer{f' >= {least}' if least else ''}; got {value!r}")
    if not isinstance(system_prompt, str):
        raise UsageError(f"system_prompt must be a string; got {type(system_prompt).__name__}")
    if judge_model is not None and (not isinstance(judge_model, str) or not judge_model.strip()):
        raise UsageError(f"judge_model must be a model name or None; got {judge_model!r}")
    if judge_base_url is not None and judge_model is None:
        raise UsageError("judge_base_url is set but judge_model is not: name the judge model too")
    train, evaluation = build_splits(chosen, float(eval_share), seed)
    if num_train_examples != -1:
        train = train[:num_train_examples]
    if num_eval_examples != -1:
        evaluation = evaluation[:num_eval_examples]
    tools = ResearchTools(default_index(), search_results, max_open_chars)
    rubric = make_rubric(judge_model, judge_base_url, judge_api_key_var)
    return DeepResearchEnv(
        tools=[tools.search, tools.open, tools.finish],
        max_turns=max_turns,
        dataset=Dataset.from_list(train) if train else None,
        eval_dataset=Dataset.from_list(evaluation) if evaluation else None,
        system_prompt=system_prompt,
        parser=rubric.parser,
        rubric=rubric,
    )


def check_kinds(kinds: Any) -> tuple[str, ...]:
    """``kinds`` as a tuple of known kinds; a single name is accepted for one kind."""
    chosen = (kinds,) if isinstance(kinds, str) else kinds
    if not isinstance(chosen, list | tuple) or not chosen:
        raise UsageError(f"kinds must be a non-empty list of {', '.join(KINDS)}; got {kinds!r}")
    unknown = [k for k in chosen if k not in KINDS]
    if unknown:
        raise UsageError(f"unknown question kind(s) {unknown!r}: choose from {', '.join(KINDS)}")
    return tuple(dict.fromkeys(chosen))
