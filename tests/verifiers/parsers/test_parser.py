import logging
from types import SimpleNamespace

import pytest

from verifiers.messages import AssistantMessage, ToolMessage, UserMessage
from verifiers.parsers.parser import Parser, message_role, message_text

CHAT = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "2+2?"},
    {"role": "assistant", "content": "4"},
    {"role": "tool", "content": "ok", "tool_call_id": "t1"},
    {"role": "user", "content": "sure?"},
    {"role": "assistant", "content": "yes, 4"},
]


def test_parse_applies_extract_fn():
    assert Parser().parse(" x ") == " x "
    assert Parser(extract_fn=str.strip).parse(" x ") == "x"


def test_parse_answer_of_a_string_parses_it_whole():
    assert Parser(extract_fn=str.upper).parse_answer("abc") == "ABC"


def test_parse_answer_of_a_chat_reads_the_last_assistant_message():
    assert Parser().parse_answer(CHAT) == "yes, 4"
    # A closing environment message is not the answer.
    assert Parser().parse_answer(CHAT[:4]) == "4"


def test_parse_answer_without_assistant_falls_back_to_last_message():
    assert Parser().parse_answer([{"role": "user", "content": "hi"}]) == "hi"


def test_parse_answer_of_an_empty_chat_is_none():
    assert Parser(extract_fn=str.upper).parse_answer([]) is None


def test_parse_answer_reads_objects_typed_messages_and_none_content():
    obj = SimpleNamespace(role="assistant", content="from object")
    assert Parser().parse_answer([obj]) == "from object"
    assert Parser().parse_answer([UserMessage(content="q"), AssistantMessage(content="typed")]) == "typed"
    tool_only = {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]}
    assert Parser().parse_answer([tool_only]) == ""


def test_message_text_joins_text_parts_and_skips_others():
    content = [
        {"type": "text", "text": "a"},
        {"type": "image_url", "image_url": {"url": "x"}},
        SimpleNamespace(type="text", text="b"),
    ]
    assert message_text({"role": "user", "content": content}) == "a\nb"
    assert message_text({"role": "user", "content": content}, separator=" ") == "a b"
    assert message_text(SimpleNamespace(content=None)) == ""
    assert message_role(SimpleNamespace(role="tool")) == "tool"
    assert message_role({"content": "no role"}) is None


def test_role_helpers_filter_in_order():
    parser = Parser()
    assert [m["content"] for m in parser.get_assistant_messages(CHAT)] == ["4", "yes, 4"]
    assert [m["content"] for m in parser.get_user_messages(CHAT)] == ["2+2?", "sure?"]
    assert [m["content"] for m in parser.get_system_messages(CHAT)] == ["be brief"]
    assert [m["content"] for m in parser.get_tool_messages(CHAT)] == ["ok"]
    assert parser.get_tool_messages([ToolMessage(content="r", tool_call_id="1")])[0].content == "r"


def test_role_helpers_reject_a_string():
    with pytest.raises(TypeError, match="completion mode"):
        Parser().get_assistant_messages("text")


def test_format_reward_func_is_named_and_gives_one():
    func = Parser().get_format_reward_func()
    assert func.__name__ == "format_reward_func"
    assert func(completion=CHAT) == 1.0
    assert func(completion="anything", answer="x", state={}) == 1.0


def test_extra_kwargs_become_attributes_with_a_debug_log(caplog):
    with caplog.at_level(logging.DEBUG, logger="verifiers.parsers.Parser"):
        parser = Parser(answer_key="final", strict=True)
    assert parser.answer_key == "final" and parser.strict is True
    assert "answer_key" in caplog.text


def test_extra_kwarg_that_shadows_a_method_is_rejected():
    with pytest.raises(TypeError, match="parse_answer"):
        Parser(parse_answer=lambda c: c)


def test_non_callable_extract_fn_is_rejected():
    with pytest.raises(TypeError, match="extract_fn"):
        Parser(extract_fn="strip")


def test_logger_is_named_after_the_class():
    class MyParser(Parser):
        pass

    assert MyParser().logger.name == "verifiers.parsers.MyParser"
