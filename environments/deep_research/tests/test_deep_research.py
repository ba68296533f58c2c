"""Tests for the deep-research environment: shipped data, query quoting, search, open, finish, splits, reward."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
import tomllib
from deep_research import load_environment
from deep_research.corpus import Document, SearchIndex, default_index, fts_query, read_corpus
from deep_research.environment import ResearchTools
from deep_research.questions import KINDS, page_bucket, read_questions, split_of
from deep_research.scoring import FinishParser, exact, normalise, submitted_answer, token_f1

from verifiers.errors import UsageError
from verifiers.state import State

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "deep_research" / "data"


@pytest.fixture(scope="module")
def env():
    return load_environment()


@pytest.fixture(scope="module")
def tools() -> ResearchTools:
    return ResearchTools(default_index(), search_results=5, max_open_chars=8000)


def _question(kind: str, entity: str | None = None) -> dict:
    return next(q for q in read_questions() if q["kind"] == kind and entity in (None, q["info"]["bridge_entity"]))


# -- shipped data ------------------------------------------------------------------------------------------


def test_the_corpus_is_the_python_docs_with_unique_ids() -> None:
    docs = read_corpus()
    ids = [d.doc_id for d in docs]
    assert len(ids) == len(set(ids)) > 2500
    assert {d.page.split("/")[0] for d in docs} == {"library", "reference", "tutorial"}
    shutil = next(d for d in docs if d.doc_id == "library/shutil")
    assert shutil.title == "shutil — High-level file operations"
    manifest = json.loads((DATA / "manifest.json").read_text())
    assert manifest["documents"] == len(docs) and manifest["questions"] == len(read_questions())
    assert manifest["source"]["package"] == "python3.11-doc_3.11.2-6+deb12u9_all.deb"
    assert (DATA / "corpus.jsonl.gz").stat().st_size + (DATA / "questions.jsonl.gz").stat().st_size < 4_000_000


def test_every_question_has_two_supporting_documents_that_show_its_evidence(tools: ResearchTools) -> None:
    index = default_index()
    questions = read_questions()
    assert len(questions) >= 300 and {q["kind"] for q in questions} == set(KINDS)
    assert len({q["question"] for q in questions}) == len(questions)  # no text asked twice
    for q in questions:
        first, last = (index.get(d) for d in q["supporting_doc_ids"])
        assert first is not None and last is not None and first.doc_id != last.doc_id, q["id"]
        # What open shows by default (8000 characters) holds the evidence.
        shown_first, shown_last = tools.open(first.doc_id), tools.open(last.doc_id)
        entity = q["info"]["bridge_entity"]
        if q["kind"] == "bridge_version":
            # The answer page states the object's note; the bridge states (a short form of) its name.
            assert f"New in version {q['answer']}." in shown_last, q["id"]
            short = entity.rsplit(".", 1)[-1]
            assert short in shown_last and short in shown_first, q["id"]
            assert q["answer_pages"] == [last.page]
        elif q["kind"] == "bridge_module":
            version = re.search(r"added in Python (\d+\.\d+)", q["question"]).group(1)
            assert f"New in version {version}." in shown_last and q["answer"] in shown_first, q["id"]
            assert last.page == q["answer_pages"][0]
        else:
            a, b = entity.split("|")
            assert f"`{a}`" in q["question"] and f"`{b}`" in q["question"] and q["answer"].isdigit()
            assert a.rsplit(".", 1)[-1] in shown_first and b.rsplit(".", 1)[-1] in shown_last, q["id"]
            assert sorted({first.page, last.page}) == q["answer_pages"]


def test_the_documented_counts_are_the_shipped_ones() -> None:
    counts = Counter(q["kind"] for q in read_questions())
    args = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["verifiers"]["args"]
    assert all(f'"{kind}" ({counts[kind]})' in args["kinds"] for kind in KINDS)


# -- query quoting -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("os.listdir", '"os.listdir"'),
        ("copy  file\tmetadata", '"copy" OR "file" OR "metadata"'),
        ('say "hi', '"say" OR """hi"'),
        ("NEAR(a b) AND c*", '"NEAR(a" OR "b)" OR "AND" OR "c*"'),
        ("", None),
        ("* ( ) \" -", None),
    ],
)
def test_fts_query_quotes_every_piece(text: str, query: str | None) -> None:
    assert fts_query(text) == query


@pytest.mark.parametrize("query", ['"', '"unbalanced', "*", "NEAR(", "NEAR(os", "AND", "OR NOT", "a AND OR b",
                                   "os:listdir", "^start", "col:", "{title}: x", "(((", "x'); DROP TABLE docs; --"])
def test_fts_syntax_in_a_query_is_searched_for_or_answered_never_raised(tools: ResearchTools, query: str) -> None:
    reply = tools.search(query)
    assert reply.startswith(("1. doc_id: ", "No document matches", "Error: the query has no words")), reply
    assert tools.search("shutil").startswith("1. doc_id: ")  # the table is still there


# -- search ------------------------------------------------------------------------------------------------


def test_search_lists_ids_titles_and_highlighted_snippets(tools: ResearchTools) -> None:
    reply = tools.search("copyfileobj buffer size")
    entries = re.findall(r"^\d+\. doc_id: (\S+)\n   title: (.+)\n   snippet: (.+)$", reply, re.MULTILINE)
    assert 1 <= len(entries) <= 5
    assert entries[0][0].startswith("library/shutil") and "[copyfileobj]" in reply


def test_search_ranks_the_answer_document_of_a_question_for_its_key_term() -> None:
    index = default_index()
    question = _question("bridge_version", "shutil.which")
    assert question["answer"] == "3.3"
    hits = [hit.doc_id for hit in index.search("shutil.which", 5)]
    assert question["supporting_doc_ids"][-1] in hits[:3]
    # Over every bridge question: the object's full name finds the document describing it, most of the time.
    bridges = [q for q in read_questions() if q["kind"] == "bridge_version"]
    found = sum(q["supporting_doc_ids"][-1] in [h.doc_id for h in index.search(q["info"]["bridge_entity"], 5)]
                for q in bridges)
    assert found / len(bridges) >= 0.8


def test_bm25_prefers_the_title_and_the_rarer_words() -> None:
    index = SearchIndex([
        Document("a", "Sorting HOW TO", "p", "general words about things"),
        Document("b", "Other", "p", "sorting appears once among many general words here"),
        Document("c", "Unrelated", "p", "general words general words"),
    ])
    assert [h.doc_id for h in index.search("sorting", 5)] == ["a", "b"]
    assert [h.doc_id for h in index.search("general sorting", 1)] == ["a"]


def test_an_empty_or_wrongly_typed_query_is_an_error_message(tools: ResearchTools) -> None:
    assert tools.search("").startswith("Error: the query has no words")
    assert tools.search("   ").startswith("Error: the query has no words")
    assert tools.search(["os"]).startswith("Error: query must be a string")  # type: ignore[arg-type]
    assert tools.search("zzqxjvwk").startswith("No document matches")


# -- open --------------------------------------------------------------------------------------------------


def test_open_shows_a_whole_document(tools: ResearchTools) -> None:
    document = default_index().get("library/shutil")
    reply = tools.open(" library/shutil ")
    assert reply == f"doc_id: library/shutil\ntitle: {document.title}\n\n{document.text}"


def test_open_cuts_a_long_document_and_says_so() -> None:
    longest = max(read_corpus(), key=lambda d: len(d.text))
    assert len(longest.text) > 8000  # a single block longer than a part may be
    reply = ResearchTools(default_index(), 5, max_open_chars=1000).open(longest.doc_id)
    body = reply.split("\n\n", 1)[1]
    assert body.startswith(longest.text[:1000]) and longest.text[:1001] not in body
    assert f"[Cut: this shows the first 1000 of {len(longest.text)} characters" in reply
    assert len(reply) < 1300


@pytest.mark.parametrize(
    ("doc_id", "expected"),
    [
        ("library/shutill", "Did you mean: library/shutil"),
        ("nothing-like-it-at-all-xyz", "Use search to find documents"),
        ("", "doc_id must be a document's id"),
        (None, "doc_id must be a document's id"),
        (42, "doc_id must be a document's id"),
    ],
)
def test_open_of_an_unknown_id_is_a_helpful_error(tools: ResearchTools, doc_id, expected: str) -> None:
    reply = tools.open(doc_id)
    assert reply.startswith("Error: ") and expected in reply


# -- finish and the answer ---------------------------------------------------------------------------------


def test_finish_accepts_a_short_answer_and_refuses_an_empty_or_typed_one(tools: ResearchTools) -> None:
    assert tools.finish(" 3.4 ") == "Answer submitted: 3.4"
    assert tools.finish("").startswith("Error: answer is empty")
    assert tools.finish(3.4).startswith("Error: answer must be a string")  # type: ignore[arg-type]


def _call(name: str, arguments: object, call_id: str = "c0") -> dict:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def test_the_submitted_answer_is_the_first_well_formed_finish_call() -> None:
    completion = [
        {"role": "assistant", "content": "", "tool_calls": [_call("finish", {"answer": ""})]},
        {"role": "tool", "content": "Error", "tool_call_id": "c0"},
        {"role": "assistant", "content": "", "tool_calls": [_call("finish", "not json")]},
        {"role": "tool", "content": "Error", "tool_call_id": "c0"},
        {"role": "assistant", "content": "",
         "tool_calls": [_call("search", {"query": "x"}), _call("finish", {"answer": " 3.7 "}, "c1")]},
        {"role": "assistant", "content": "", "tool_calls": [_call("finish", {"answer": "3.8"})]},
    ]
    assert submitted_answer(completion) == "3.7" == FinishParser().parse_answer(completion)
    assert submitted_answer([{"role": "assistant", "content": "The answer is 3.7"}]) is None


@pytest.mark.parametrize(
    ("prediction", "gold", "same"),
    [("3.4", "3.4", True), ("Python 3.4.", "3.4", True), ("`lzma`", "lzma", True), ("version 3.10", "3.10", True),
     ("importlib.metadata", "importlib.metadata", True), ("2", "2", True), ("3.4.0", "3.4", False),
     ("3.1", "3.10", False), ("It was added in 3.4", "3.4", False), ("", "", False)],
)
def test_exact_match_normalises_only_the_wrapping(prediction: str, gold: str, same: bool) -> None:
    assert exact(prediction, gold) == float(same)


def test_token_f1_keeps_dotted_names_and_versions_whole() -> None:
    assert normalise(" **Python 3.4** ") == "3.4"
    assert token_f1("3.4", "3.4") == 1.0
    assert token_f1("it was added in 3.4", "3.4") == pytest.approx(2 * (1 / 5) / (1 / 5 + 1))
    assert token_f1("3", "3.4") == 0.0  # 3.4 is one token
    assert token_f1("importlib", "importlib.metadata") == 0.0


async def _score(env, completion: list[dict], answer: str = "3.4", supporting=("a", "b")) -> State:
    state = State.new(prompt=[{"role": "user", "content": "q"}], answer=answer,
                      info={"supporting_doc_ids": list(supporting)})
    state["completion"] = completion
    await env.rubric.score_rollout(state)
    return state


async def test_reward_is_exact_match_with_f1_opened_and_finished_as_metrics(env) -> None:
    opened_a = {"role": "assistant", "content": "", "tool_calls": [_call("open", {"doc_id": "a"})]}

    def finishing(answer: str) -> list[dict]:
        return [opened_a, {"role": "assistant", "content": "", "tool_calls": [_call("finish", {"answer": answer})]}]

    right = await _score(env, finishing("Python 3.4"))
    assert right["reward"] == 1.0
    assert right["metrics"] == {"exact_match": 1.0, "answer_f1": 1.0, "supporting_docs_opened": 0.5, "finished": 1.0}
    hedged = await _score(env, finishing("3.4 or 3.5"))
    assert hedged["reward"] == 0.0 and hedged["metrics"]["answer_f1"] == pytest.approx(0.5)
    wrong = await _score(env, finishing("3.5"))
    assert wrong["reward"] == 0.0 and wrong["metrics"]["answer_f1"] == 0.0 and wrong["metrics"]["finished"] == 1.0
    unfinished = await _score(env, [{"role": "assistant", "content": "3.4"}])
    assert unfinished["reward"] == 0.0 and unfinished["metrics"]["finished"] == 0.0


# -- splits ------------------------------------------------------------------------------------------------


def test_splits_share_no_prompt_and_no_answer_page(env) -> None:
    train, evaluation = env.get_dataset(), env.get_eval_dataset()
    assert set(train["question"]).isdisjoint(evaluation["question"])
    prompts = {json.dumps(r["prompt"], sort_keys=True) for r in train}
    assert prompts.isdisjoint(json.dumps(r["prompt"], sort_keys=True) for r in evaluation)
    train_pages = {p for info in train["info"] for p in info["answer_pages"]}
    eval_pages = {p for info in evaluation["info"] for p in info["answer_pages"]}
    assert train_pages.isdisjoint(eval_pages)
    assert all(page_bucket(p) < 0.3 for p in eval_pages) and all(page_bucket(p) >= 0.3 for p in train_pages)
    kept = [q for q in read_questions() if split_of(q, 0.3) is not None]
    assert len(train) + len(evaluation) == len(kept) >= len(read_questions()) - 5
    assert 0.15 < len(evaluation) / len(kept) < 0.45
    assert set(Counter(i["kind"] for i in evaluation["info"])) == set(KINDS)


def test_a_question_whose_answer_pages_disagree_is_in_neither_split() -> None:
    question = {"answer_pages": ["library/a", "library/b"]}
    sides = {page_bucket("library/a") < 0.5, page_bucket("library/b") < 0.5}
    assert split_of(question, 0.5) is (None if len(sides) == 2 else ("eval" if sides.pop() else "train"))
    assert split_of({"answer_pages": ["library/os"]}, 0.999999) == "eval"


def test_the_split_does_not_depend_on_kinds_or_seed(env) -> None:
    only = load_environment(kinds=["bridge_module"], seed=5).get_eval_dataset()
    full = {q for q, i in zip(env.get_eval_dataset()["question"], env.get_eval_dataset()["info"])
            if i["kind"] == "bridge_module"}
    assert set(only["question"]) == full


def test_rows_prompt_the_question_after_the_tools_system_prompt(env) -> None:
    row = env.get_eval_dataset()[0]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert "finish(answer)" in row["prompt"][0]["content"]
    assert row["task"] == "deep-research" and row["info"]["kind"] in KINDS
    assert [t["function"]["name"] for t in env.oai_tools] == ["search", "open", "finish"]
    assert env.era == "state" and env.max_turns == 10


def test_sizes_seed_and_kinds() -> None:
    a = load_environment(num_train_examples=7, num_eval_examples=3, kinds="comparison")
    b = load_environment(num_train_examples=7, num_eval_examples=3, kinds="comparison", seed=1)
    assert (len(a.get_dataset()), len(a.get_eval_dataset())) == (7, 3)
    assert {i["kind"] for i in a.get_dataset()["info"]} == {"comparison"}
    assert a.get_dataset()["question"] != b.get_dataset()["question"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kinds": ["trivia"]}, "unknown question kind"),
        ({"kinds": []}, "kinds must be"),
        ({"eval_share": 1}, "eval_share"),
        ({"eval_share": "0.3"}, "eval_share"),
        ({"num_train_examples": 0}, "num_train_examples"),
        ({"num_eval_examples": -2}, "num_eval_examples"),
        ({"max_turns": 1}, "max_turns"),
        ({"search_results": 0}, "search_results"),
        ({"max_open_chars": 10}, "max_open_chars"),
        ({"seed": 1.5}, "seed"),
        ({"system_prompt": None}, "system_prompt"),
        ({"judge_model": " "}, "judge_model"),
        ({"judge_base_url": "http://127.0.0.1:1/v1"}, "judge_model is not"),
    ],
)
def test_bad_arguments_raise_a_clear_error(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_environment(**kwargs)
