"""Tests for the science environment: bundled data, honest splits, answer parsing, reward, judge, rollouts."""

from __future__ import annotations

import re
from collections import Counter

import openai
import pytest
from science import load_environment
from science.choices import format_question, parse_choice
from science.environment import SUBJECTS, read_subject

from verifiers.errors import UsageError
from verifiers.state import State
from verifiers.testing import Reply, ScriptedRequest, ScriptedServer

CHOICES = ["0.5 m/s", "1 m/s", "A decrease in pressure", "none of these"]


@pytest.fixture(scope="module")
def env():
    return load_environment()


def _normal(question: str) -> str:
    return " ".join(question.split()).casefold()


def _stem(row_question: str) -> str:
    """The question text of a formatted prompt (what precedes the blank line before the options)."""
    return row_question.split("\n\nA. ")[0]


# -- data and splits -------------------------------------------------------------------


def test_bundled_subjects_are_complete() -> None:
    assert {s: len(read_subject(s)) for s in SUBJECTS} == {"physics": 733, "chemistry": 347, "biology": 784}
    for subject in SUBJECTS:
        for row in read_subject(subject):
            assert len(row["choices"]) == 4 and row["answer"] == "ABCD"[row["answer_index"]]


def test_splits_are_disjoint_and_cover_every_distinct_prompt(env) -> None:
    train, evaluation = env.get_dataset(), env.get_eval_dataset()
    train_questions = {_normal(_stem(q)) for q in train["question"]}
    eval_questions = {_normal(_stem(q)) for q in evaluation["question"]}
    assert train_questions.isdisjoint(eval_questions)  # no question text in both, let alone a prompt
    assert set(train["question"]).isdisjoint(evaluation["question"])
    distinct = {(r["question"], tuple(r["choices"])) for s in SUBJECTS for r in read_subject(s)}
    assert len(train) + len(evaluation) == len(distinct) == 1845
    assert 0.25 < len(evaluation) / 1845 < 0.35  # eval_share 0.3
    assert set(Counter(i["subject"] for i in evaluation["info"])) == set(SUBJECTS)


def test_a_question_asked_twice_stays_on_one_side(env) -> None:
    # MMLU physics asks some questions twice with different options; both copies must fall on the same side.
    repeated = [q for q, n in Counter(_normal(r["question"]) for r in read_subject("physics")).items() if n > 1]
    assert repeated
    train = Counter(_normal(_stem(q)) for q in env.get_dataset()["question"])
    evaluation = Counter(_normal(_stem(q)) for q in env.get_eval_dataset()["question"])
    assert all((q in train) != (q in evaluation) for q in repeated)


def test_eval_split_does_not_depend_on_subjects_or_seed(env) -> None:
    physics = load_environment(subjects=["physics"], seed=7).get_eval_dataset()
    everything = {q for q, info in zip(env.get_eval_dataset()["question"], env.get_eval_dataset()["info"])
                  if info["subject"] == "physics"}
    assert set(physics["question"]) == everything


def test_rows_prompt_the_question_with_lettered_options(env) -> None:
    row = env.get_eval_dataset()[0]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert "Answer: X" in row["prompt"][0]["content"]
    lines = row["prompt"][1]["content"].split("\n")
    assert [line[:3] for line in lines[-4:]] == ["A. ", "B. ", "C. ", "D. "]
    assert [line[3:] for line in lines[-4:]] == [c.strip() for c in row["info"]["choices"]]
    assert row["answer"] in "ABCD" and row["task"] == "science"
    assert re.fullmatch(r"mmlu/\w+/(test|val|dev)/\d+", row["info"]["id"])


def test_loading_is_deterministic_and_seed_reorders() -> None:
    a = load_environment(num_eval_examples=30).get_eval_dataset()["question"]
    b = load_environment(num_eval_examples=30).get_eval_dataset()["question"]
    c = load_environment(num_eval_examples=30, seed=1).get_eval_dataset()["question"]
    assert a == b and a != c


def test_sizes_and_subject_filter() -> None:
    env = load_environment(subjects="chemistry", num_train_examples=10, num_eval_examples=5)
    assert (len(env.get_dataset()), len(env.get_eval_dataset())) == (10, 5)
    assert {i["subject"] for i in env.get_eval_dataset()["info"]} == {"chemistry"}


# -- reading the pick ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "pick"),
    [
        ("B", "B"),
        ("b", "B"),
        ("(C)", "C"),
        ("[D].", "D"),
        ("Velocity halves, so the answer is (A).", "A"),
        ("Working...\nAnswer: B", "B"),
        ("**Answer:** D", "D"),
        ("Final answer: B. 1 m/s", "B"),
        ("<think>maybe A</think>Answer: C", "C"),
        ("so \\boxed{B}", "B"),
        ("\\boxed{\\text{D}}", "D"),
        ("Answer: 1 m/s", "B"),  # the option's text
        ("Answer: a decrease in pressure.", "C"),  # text, case and full stop aside: not the letter A
        ("A decrease in pressure", "C"),
        ("Answer: E", None),  # no such option
        ("Answer: 2 m/s", None),  # no option has that text
        ("I think it is probably one of them", None),
        ("", None),
    ],
)
def test_parse_choice(reply: str, pick: str | None) -> None:
    assert parse_choice(reply, CHOICES) == pick


def test_format_question() -> None:
    assert format_question(" Q? ", ["x ", "y", "z", "w"]) == "Q?\n\nA. x\nB. y\nC. z\nD. w"


# -- reward ----------------------------------------------------------------------------


async def _score(env, reply: str, answer: str = "B") -> State:
    state = State.new(prompt=[{"role": "user", "content": "q"}], answer=answer, info={"choices": CHOICES})
    state["completion"] = [{"role": "assistant", "content": reply}]
    await env.rubric.score_rollout(state)
    return state


@pytest.mark.parametrize(("reply", "reward"), [("Answer: B", 1.0), ("1 m/s", 1.0), ("Answer: C", 0.0), ("", 0.0)])
async def test_reward_on_hand_made_replies(env, reply: str, reward: float) -> None:
    state = await _score(env, reply)
    assert state["reward"] == reward and list(state["metrics"]) == ["correct_choice"]


# -- arguments -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"subjects": ["geology"]}, "unknown subject"),
        ({"subjects": []}, "subjects must be"),
        ({"subjects": 3}, "subjects must be"),
        ({"eval_share": 0}, "eval_share"),
        ({"eval_share": 1.5}, "eval_share"),
        ({"eval_share": "0.3"}, "eval_share"),
        ({"num_train_examples": 0}, "num_train_examples"),
        ({"num_eval_examples": -2}, "num_eval_examples"),
        ({"seed": "1"}, "seed"),
        ({"system_prompt": None}, "system_prompt"),
        ({"judge_model": ""}, "judge_model"),
        ({"judge_base_url": "http://127.0.0.1:1/v1"}, "judge_model is not"),
    ],
)
def test_bad_arguments_raise_a_clear_error(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_environment(**kwargs)


# -- end to end ------------------------------------------------------------------------


def _answer_key(env, n: int) -> dict[str, tuple[str, list[str]]]:
    rows = env.get_eval_dataset().select(range(n))
    return {q: (a, info["choices"]) for q, a, info in zip(rows["question"], rows["answer"], rows["info"])}


async def test_rollouts_against_a_scripted_model() -> None:
    env = load_environment(num_eval_examples=6)
    key = _answer_key(env, 6)
    order = list(key)

    def student(request: ScriptedRequest) -> str:
        """Right by letter, right by the option's text, then wrong, in turn."""
        letter, choices = key[request.last_user_text]
        position = order.index(request.last_user_text) % 3
        if position == 0:
            return f"Let me think.\nAnswer: {letter}"
        if position == 1:
            return f"Answer: {choices['ABCD'.index(letter)]}"
        return f"Answer: {'ABCD'[('ABCD'.index(letter) + 1) % 4]}"

    with ScriptedServer(student, port=0).running() as base_url:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
        results = await env.evaluate(client, "scripted", num_examples=6, rollouts_per_example=1)
    assert [o["reward"] for o in results["outputs"]] == [1.0, 1.0, 0.0, 1.0, 1.0, 0.0]


def _grader(request: ScriptedRequest) -> Reply:
    """A judge that reads its own prompt: yes when the reply's last line names the correct letter."""
    prompt = request.last_user_text
    correct = re.search(r"Letter of the correct option:\n(\w)", prompt)
    reply = prompt.split("Reply:\n", 1)[1].split("\n\nDoes the reply", 1)[0]
    return Reply("Yes." if correct and reply.strip().endswith(correct.group(1)) else "no")


async def test_judge_scores_with_its_verdict_and_keeps_the_exact_pick() -> None:
    with ScriptedServer(_grader, port=0).running() as judge_url:
        env = load_environment(num_eval_examples=4, judge_model="grader", judge_base_url=judge_url)
        key = _answer_key(env, 4)

        def student(request: ScriptedRequest) -> str:
            letter, choices = key[request.last_user_text]
            # Two right by letter (the judge agrees), two by the option's text (this judge says no).
            if list(key).index(request.last_user_text) < 2:
                return f"Answer: {letter}"
            return f"Answer: {choices['ABCD'.index(letter)]}"

        with ScriptedServer(student, port=0).running() as base_url:
            client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
            results = await env.evaluate(client, "scripted", num_examples=4, rollouts_per_example=1)
    outputs = results["outputs"]
    assert [o["reward"] for o in outputs] == [1.0, 1.0, 0.0, 0.0]
    assert [o["metrics"]["judged_correct"] for o in outputs] == [1.0, 1.0, 0.0, 0.0]
    assert [o["metrics"]["correct_choice"] for o in outputs] == [1.0] * 4


async def test_an_unreachable_judge_is_an_error_not_a_silent_zero() -> None:
    env = load_environment(num_eval_examples=1, judge_model="grader", judge_base_url="http://127.0.0.1:9/v1")
    env.rubric.judge_client = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="x", max_retries=0)
    env.rubric.class_objects["judge_client"] = env.rubric.judge_client
    state = await _score(env, "Answer: B")
    assert state["reward"] == 0.0
    assert "judged_correct" in state["scoring_errors"] and "JudgeError" in state["scoring_errors"]["judged_correct"]
