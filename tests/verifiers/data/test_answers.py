import pytest

from verifiers.data import (
    BOXED_SYSTEM_PROMPT,
    THINK_BOXED_SYSTEM_PROMPT,
    extract_boxed_answer,
    extract_hash_answer,
    load_example_dataset,
)
from verifiers.utils import data_utils


@pytest.mark.parametrize(
    "text, expected",
    [
        ("so the answer is \\boxed{42}.", "42"),
        ("\\boxed{1} and then \\boxed{2}", "2"),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)} done", "\\left( 3, \\frac{\\pi}{2} \\right)"),
        ("\\boxed{}", ""),
        ("no box here", "no box here"),
        ("\\boxed{unclosed {brace}", "\\boxed{unclosed {brace}"),
        ("\\boxed {spaced}", "\\boxed {spaced}"),
        ("", ""),
    ],
)
def test_extract_boxed_answer(text, expected):
    assert extract_boxed_answer(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Natalia sold 48/2 = <<48/2=24>>24 clips.\n#### 72", "72"),
        ("####   1,000  \n", "1,000"),
        ("a #### 1 #### 2", "1"),
        ("####", ""),
        # Without the marker the text comes back unchanged, unstripped (both classic releases).
        ("no marker", "no marker"),
        ("### 3", "### 3"),
        (" 42 \n", " 42 \n"),
        ("", ""),
    ],
)
def test_extract_hash_answer(text, expected):
    assert extract_hash_answer(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("so the answer is \\boxed{42}.", "42"),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{}", ""),
        ("no box here", ""),
        ("42", ""),
        ("\\boxed{unclosed {brace}", ""),
        ("\\boxed {spaced}", ""),
        ("", ""),
    ],
)
def test_extract_boxed_answer_strict_gives_empty_without_a_complete_box(text, expected):
    assert extract_boxed_answer(text, strict=True) == expected
    assert extract_boxed_answer(text, True) == expected  # positional, as functools.partial users pass it


def test_extract_boxed_answer_strict_must_be_a_bool():
    with pytest.raises(TypeError, match="strict must be a bool"):
        extract_boxed_answer("\\boxed{1}", strict="yes")


@pytest.mark.parametrize("func", [extract_boxed_answer, extract_hash_answer])
def test_extractors_reject_non_strings(func):
    with pytest.raises(TypeError, match="expects a str"):
        func(None)


def test_system_prompts_ask_for_a_boxed_answer():
    assert "\\boxed{}" in BOXED_SYSTEM_PROMPT
    assert "\\boxed{}" in THINK_BOXED_SYSTEM_PROMPT and "<think>" in THINK_BOXED_SYSTEM_PROMPT


def test_classic_data_utils_path_reexports_the_same_objects():
    assert data_utils.extract_boxed_answer is extract_boxed_answer
    assert data_utils.extract_hash_answer is extract_hash_answer
    assert data_utils.load_example_dataset is load_example_dataset
    assert data_utils.BOXED_SYSTEM_PROMPT is BOXED_SYSTEM_PROMPT
    assert data_utils.THINK_BOXED_SYSTEM_PROMPT is THINK_BOXED_SYSTEM_PROMPT
