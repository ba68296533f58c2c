import logging

import pytest

from verifiers.data import extract_boxed_answer
from verifiers.parsers import ThinkParser


@pytest.fixture
def parser():
    return ThinkParser()


def assistant(content):
    return {"role": "assistant", "content": content}


def test_construction_warns(caplog):
    with caplog.at_level(logging.WARNING, logger="verifiers.parsers.ThinkParser"):
        ThinkParser()
    assert "</think>" in caplog.text


def test_parse_takes_stripped_text_after_the_last_close_tag(parser):
    assert parser.parse("<think>a</think>\n  42 \n") == "42"
    assert parser.parse("<think>a</think>x</think> final") == "final"


def test_parse_without_close_tag_is_empty(parser):
    assert parser.parse("just 42") == ""
    assert parser.parse("<think>never closed 42") == ""


def test_extract_fn_runs_on_the_text_after_thinking():
    parser = ThinkParser(extract_fn=extract_boxed_answer)
    assert parser.parse("<think>maybe \\boxed{1}</think> so \\boxed{2}") == "2"
    assert parser.parse_answer([assistant("<think>t</think>\\boxed{7}")]) == "7"


def test_parse_answer_of_a_string(parser):
    assert parser.parse_answer("<think>t</think> yes") == "yes"


@pytest.mark.parametrize(
    "content, expected",
    [
        ("<think>\nreason\n</think>\nanswer", 1.0),
        ("  <think>r</think>a", 1.0),  # leading whitespace is stripped before the start check
        ("<think>r</think>\n", 1.0),  # whitespace after </think> counts as text
        ("<think>r</think>", 0.0),  # nothing after </think>
        ("answer <think>r</think> more", 0.0),  # does not start with <think>
        ("<think>a</think><think>b</think>c", 0.0),  # two blocks
        ("<think>r answer", 0.0),  # never closed
        (None, 0.0),
    ],
)
def test_format_reward_per_message(parser, content, expected):
    assert parser.get_format_reward_func()(completion=[assistant(content)]) == expected


def test_format_reward_is_the_mean_over_assistant_messages(parser):
    completion = [
        assistant("<think>a</think>b"),
        {"role": "user", "content": "<think>ignored</think>"},
        assistant("no think"),
        assistant("<think>c</think>d"),
        assistant("<think>e"),
    ]
    func = parser.get_format_reward_func()
    assert func.__name__ == "format_reward_func"
    assert func(completion=completion) == pytest.approx(2 / 4)


def test_format_reward_without_assistant_messages_is_zero(parser):
    func = parser.get_format_reward_func()
    assert func(completion=[]) == 0.0
    assert func(completion=[{"role": "user", "content": "<think>a</think>b"}]) == 0.0


def test_format_reward_of_a_string_completion(parser):
    func = parser.get_format_reward_func()
    assert func(completion="<think>a</think>b") == 1.0
    assert func(completion="b") == 0.0


def test_format_reward_joins_text_parts_with_spaces(parser):
    content = [{"type": "text", "text": "<think>a</think>"}, {"type": "text", "text": "b"}]
    assert parser.get_format_reward_func()(completion=[assistant(content)]) == 1.0


def test_non_string_input_fails_loudly(parser):
    with pytest.raises(TypeError, match="expects a str"):
        parser.parse(42)
