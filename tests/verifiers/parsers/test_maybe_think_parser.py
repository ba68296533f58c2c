import logging

import pytest

from verifiers.data import extract_boxed_answer
from verifiers.parsers import MaybeThinkParser


def test_text_without_think_is_kept_stripped():
    assert MaybeThinkParser().parse("  The answer is 4 ") == "The answer is 4"


def test_think_block_is_dropped():
    assert MaybeThinkParser().parse("<think>hmm</think> The answer is 4") == "The answer is 4"
    assert MaybeThinkParser().parse("<think>a</think>b</think> c") == "c"


def test_parse_answer_of_chat_and_string():
    parser = MaybeThinkParser(extract_fn=extract_boxed_answer)
    chat = [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "<think>\\boxed{5}?</think>so \\boxed{4}"},
    ]
    assert parser.parse_answer(chat) == "4"
    assert parser.parse_answer("\\boxed{4}") == "4"


def test_does_not_warn_at_construction(caplog):
    with caplog.at_level(logging.WARNING):
        MaybeThinkParser()
    assert caplog.records == []


def test_non_string_input_fails_loudly():
    with pytest.raises(TypeError, match="MaybeThinkParser.parse expects a str"):
        MaybeThinkParser().parse(None)
