import pytest

from verifiers.data import formats
from verifiers.errors import UsageError

GPQA_ROW = {
    "Question": " Which is right? ",
    "Correct Answer": "right",
    "Incorrect Answer 1": "wrong 1",
    "Incorrect Answer 2": "wrong 2",
    "Incorrect Answer 3": "wrong 3",
}


def option(question, letter):
    line = next(line for line in question.splitlines() if line.startswith(f"{letter}: "))
    return line[3:]


def test_gsm8k_takes_the_number_after_hashes_or_keeps_a_bare_answer():
    assert formats.gsm8k({"question": "q", "answer": "work\n#### 12"}, 0, 0)["answer"] == "12"
    assert formats.gsm8k({"question": "q", "answer": " 12 "}, 0, 0)["answer"] == "12"


def test_math_prefers_answer_then_boxed_solution():
    assert formats.math_problem({"problem": "p", "answer": "3", "solution": "\\boxed{4}"}, 0, 0)["answer"] == "3"
    assert formats.math_problem({"problem": "p", "solution": "so \\boxed{\\frac12}."}, 0, 0)["answer"] == "\\frac12"


def test_integer_answer():
    assert formats.integer_answer({"problem": "p", "answer": "033"}, 0, 0)["answer"] == "33"
    assert formats.integer_answer({"question": "p", "answer": "\\boxed{204}"}, 0, 0)["answer"] == "204"
    assert formats.integer_answer({"problem": "p", "answer": "none"}, 0, 0)["answer"] == "none"


def test_mmlu_accepts_letter_or_index_answers_and_options():
    row = formats.mmlu({"question": "q", "choices": ["w", "x", "y", "z"], "answer": 2}, 0, 0)
    assert row == {"question": "Question: q\n\nA: w\nB: x\nC: y\nD: z", "answer": "C"}
    pro = formats.mmlu({"question": "q", "options": list("abcdefghij"), "answer": "J"}, 0, 0)
    assert pro["answer"] == "J" and pro["question"].endswith("J: j")


def test_mmlu_rejects_too_many_options():
    with pytest.raises(UsageError, match="at most 10 options"):
        formats.mmlu({"question": "q", "choices": list("abcdefghijk"), "answer": 0}, 0, 0)


def test_gpqa_answer_letter_points_at_the_correct_option():
    for index in range(20):
        row = formats.gpqa(GPQA_ROW, index, seed=0)
        assert row["question"].startswith("Question: Which is right?\n\n")
        assert option(row["question"], row["answer"]) == "right"
    letters = {formats.gpqa(GPQA_ROW, i, seed=0)["answer"] for i in range(40)}
    assert len(letters) > 1  # the correct option does not always sit at A


def test_gpqa_order_is_deterministic_per_seed_and_row():
    assert formats.gpqa(GPQA_ROW, 3, 0) == formats.gpqa(GPQA_ROW, 3, 0)
    assert {formats.gpqa(GPQA_ROW, 3, s)["question"] for s in range(10)} != {formats.gpqa(GPQA_ROW, 3, 0)["question"]}


def test_openbookqa():
    row = {"question_stem": "Sun is a", "choices": {"label": ["A", "B"], "text": ["star", "planet"]}, "answerKey": "A"}
    assert formats.openbookqa(row, 0, 0) == {
        "question": "Question: Sun is a\n\nChoices:\nA. star\nB. planet",
        "answer": "A",
    }


def test_code_verification_keeps_json_text():
    row = formats.code_verification({"prompt": "p", "verification_info": {"tests": [1]}}, 0, 0)
    assert row == {"question": "p", "answer": '{"tests": [1]}'}


def test_missing_field_names_the_alternatives():
    with pytest.raises(UsageError, match=r"\['answer'\]"):
        formats.plain({"question": "q"}, 0, 0)
    with pytest.raises(UsageError, match="Correct Answer"):
        formats.gpqa({"Question": "q"}, 0, 0)
