import logging

import pytest

from verifiers.parsers import XMLParser


def assistant(content):
    return {"role": "assistant", "content": content}


@pytest.fixture
def parser():
    return XMLParser(["think", "answer"])


# --- construction ---------------------------------------------------------


def test_fields_and_alternatives():
    parser = XMLParser(["reasoning", ("code", "answer")])
    assert parser.get_fields() == ["reasoning", "code"]
    assert parser.answer_field == "answer"


@pytest.mark.parametrize(
    "fields, error, message",
    [
        (["a", "a"], ValueError, "duplicate"),
        (["a", ("a", "b")], ValueError, "duplicate"),
        ([()], ValueError, "at least one tag"),
        ([], ValueError, "at least one field"),
        ([""], ValueError, "non-empty"),
        ([("a", 1)], TypeError, "must be a str"),
        ([1], TypeError, "str or a tuple"),
        ([["a", "b"]], TypeError, "str or a tuple"),
        ("answer", TypeError, "list of tag names"),
    ],
)
def test_bad_fields_are_rejected(fields, error, message):
    with pytest.raises(error, match=message):
        XMLParser(fields)


def test_think_field_warns(caplog):
    with caplog.at_level(logging.WARNING, logger="verifiers.parsers.XMLParser"):
        XMLParser(["answer"])
    assert caplog.records == []
    with caplog.at_level(logging.WARNING, logger="verifiers.parsers.XMLParser"):
        XMLParser(["think", "answer"])
    assert "think" in caplog.text


# --- parse ----------------------------------------------------------------


def test_parse_gives_every_allowed_tag(parser):
    result = parser.parse("<think>\n  step one\n</think>\n<answer>4</answer>")
    assert result.think == "step one"
    assert result.answer == "4"
    assert parser.parse("nothing here").answer is None


def test_parse_exposes_alternatives_separately():
    parser = XMLParser(["reasoning", ("code", "answer")])
    result = parser.parse("<reasoning>r</reasoning><answer>a</answer>")
    assert (result.reasoning, result.code, result.answer) == ("r", None, "a")


def test_parse_first_or_last_occurrence(parser):
    text = "<answer>1</answer> then <answer>\n2\n</answer>"
    assert parser.parse(text).answer == "1"
    assert parser.parse(text, last=True).answer == "2"
    assert parser.parse(text, strip=False, last=True).answer == "2"


def test_parse_spans_lines_and_allows_empty_fields(parser):
    assert parser.parse("<think>a\nb</think>").think == "a\nb"
    assert parser.parse("<answer></answer>").answer == ""


def test_tag_names_are_literal_not_regex():
    parser = XMLParser(["a.b"])
    assert parser.parse("<aXb>1</aXb>").__dict__ == {"a.b": None}
    assert getattr(parser.parse("<a.b>1</a.b>"), "a.b") == "1"


def test_parse_rejects_non_strings(parser):
    with pytest.raises(TypeError, match="expects a str"):
        parser.parse(None)


# --- parse_answer ---------------------------------------------------------


def test_parse_answer_of_a_string_takes_the_last_answer(parser):
    assert parser.parse_answer("<answer>1</answer><answer>2</answer>") == "2"
    assert parser.parse_answer("no answer") is None


def test_parse_answer_scans_assistant_messages_from_the_end(parser):
    completion = [
        assistant("<answer>first</answer>"),
        {"role": "user", "content": "<answer>from user</answer>"},
        assistant("<answer>second</answer><answer>third</answer>"),
        assistant("no tags in the last turn"),
        {"role": "tool", "content": "<answer>tool</answer>", "tool_call_id": "1"},
    ]
    # within a chat message the FIRST match counts (verified against verifiers 0.1.5 and 0.3.0)
    assert parser.parse_answer(completion) == "second"
    assert parser.parse_answer([assistant(None), {"role": "user", "content": "<answer>u</answer>"}]) is None
    assert parser.parse_answer([]) is None


def test_parse_answer_uses_the_answer_field():
    parser = XMLParser(["reasoning", "final"], answer_field="final")
    assert parser.parse_answer([assistant("<final>x</final>")]) == "x"


def test_extract_fn_is_not_applied_as_in_classic_verifiers():
    parser = XMLParser(["answer"], extract_fn=str.upper)
    assert parser.extract_fn is str.upper
    assert parser.parse_answer("<answer>x</answer>") == "x"


# --- format helpers -------------------------------------------------------


def test_format_str():
    parser = XMLParser(["think", ("code", "answer")])
    assert parser.get_format_str() == "<think>\n...\n</think>\n<[ code | answer ]>\n...\n</[ code | answer ]>"


def test_format_uses_canonical_tags():
    parser = XMLParser(["think", ("code", "answer")])
    assert parser.format(think="t", answer="a") == "<think>\nt\n</think>\n<code>\na\n</code>"
    assert parser.format(think="t", code="c", answer="a") == "<think>\nt\n</think>\n<code>\nc\n</code>"


def test_format_round_trips_through_parse(parser):
    result = parser.parse(parser.format(think="because", answer=42))
    assert (result.think, result.answer) == ("because", "42")


def test_format_missing_field_raises(parser):
    with pytest.raises(ValueError, match="'answer'"):
        parser.format(think="t")


# --- format reward (0.4 fields present + 0.2 spacing + 0.2 start + 0.2 end) ---


@pytest.mark.parametrize(
    "content, expected",
    [
        ("<think>\nhi\n</think>\n<answer>\n4\n</answer>", 1.0),  # 0.4 + 0.2 + 0.2 + 0.2
        ("  <think>hi</think><answer>4</answer>\n", 1.0),  # outer whitespace is stripped
        ("<answer>4</answer>", 0.6),  # 0.4*1/2 + 0.2 + end 0.2
        ("<think>x</think>", 0.6),  # 0.4*1/2 + 0.2 + start 0.2
        ("<answer>4</answer><think>x</think>", 0.6),  # wrong order: 0.4 + 0.2, no start, no end
        ("<think>unclosed <answer>4</answer>", 1.0),  # a bare <think> still marks its set present
        ("</answer>", 0.4),  # no field parses: no 0.4 part; 0.2 + end 0.2
        ("no tags at all", 0.2),  # only the spacing part
        ("", 0.2),
        (None, 0.2),
    ],
)
def test_format_reward_per_message(parser, content, expected):
    func = parser.get_format_reward_func()
    assert func(completion=[assistant(content)]) == pytest.approx(expected)


def test_format_reward_with_alternatives_and_three_fields():
    alt = XMLParser(["reasoning", ("code", "answer")]).get_format_reward_func()
    assert alt(completion=[assistant("<reasoning>r</reasoning><answer>a</answer>")]) == pytest.approx(1.0)
    assert alt(completion=[assistant("<reasoning>r</reasoning><code>c</code>")]) == pytest.approx(1.0)
    three = XMLParser(["a", "b", "c"]).get_format_reward_func()
    # 0.4 * 2/3 + 0.2 + 0.2 + 0.2
    assert three(completion=[assistant("<a>1</a><c>3</c>")]) == pytest.approx(0.6 + 0.4 * 2 / 3)


def test_format_reward_sums_in_classic_order(parser):
    # 0.4*0.5 then +0.2 then +0.2 gives this exact float, as in classic verifiers.
    assert parser.get_format_reward_func()(completion=[assistant("<answer>4</answer>")]) == 0.6000000000000001


def test_format_reward_is_the_mean_over_assistant_messages(parser):
    completion = [
        assistant("<think>a</think><answer>b</answer>"),  # 1.0
        {"role": "user", "content": "ignored"},
        assistant("plain text"),  # 0.2
    ]
    func = parser.get_format_reward_func()
    assert func.__name__ == "format_reward_func"
    assert func(completion=completion) == pytest.approx(0.6)


def test_format_reward_without_assistant_messages_is_zero(parser):
    func = parser.get_format_reward_func()
    assert func(completion=[]) == 0.0
    assert func(completion=[{"role": "user", "content": "<think>a</think><answer>b</answer>"}]) == 0.0


def test_format_reward_of_a_string_completion(parser):
    assert parser.get_format_reward_func()(completion="<think>a</think><answer>b</answer>") == pytest.approx(1.0)
