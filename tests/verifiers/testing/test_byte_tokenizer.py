"""ByteTokenizer: ids are bytes plus special tokens; chat templates render like HF's apply_chat_template."""

from __future__ import annotations

import pytest
from jinja2.exceptions import SecurityError, TemplateError

from verifiers.testing import CHATML, QWEN3_STYLE, SPECIAL_TOKENS, ByteTokenizer

tok = ByteTokenizer()


def test_encode_is_utf8_bytes_and_decode_round_trips():
    text = "héllo ✓"
    assert tok.encode(text) == list(text.encode())
    assert tok.decode(tok.encode(text)) == text


def test_special_token_strings_become_single_ids():
    ids = tok.encode("<think>a</think><|im_end|>")
    assert ids == [259, ord("a"), 260, 258]
    assert tok.decode(ids) == "<think>a</think><|im_end|>"
    assert tok.decode(ids, skip_special_tokens=True) == "a"


def test_vocabulary_and_hf_attributes():
    assert tok.vocab_size == len(tok) == 256 + len(SPECIAL_TOKENS)
    assert tok.eos_token_id == tok.convert_tokens_to_ids("<|im_end|>") == 258
    assert tok.pad_token_id == 256
    assert tok.convert_tokens_to_ids("a") == 97
    assert tok.convert_ids_to_tokens([97, 257]) == ["a", "<|im_start|>"]
    assert tok.token_bytes(257) == b"<|im_start|>"
    assert tok("ab") == {"input_ids": [97, 98], "attention_mask": [1, 1]}


def test_bad_inputs_raise():
    with pytest.raises(TypeError):
        tok.encode(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([tok.vocab_size])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([-1])
    with pytest.raises(ValueError, match="not a token"):
        tok.convert_tokens_to_ids("ab")
    with pytest.raises(TypeError):
        tok.apply_chat_template("hello")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        tok.apply_chat_template(["hello"])  # type: ignore[list-item]


def test_apply_chat_template_text_and_ids():
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert text == (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\nhi<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert tok.apply_chat_template(messages, add_generation_prompt=True) == tok.encode(text)
    assert not tok.apply_chat_template(messages, tokenize=False).endswith("assistant\n")


def test_template_by_short_name_and_per_call_override():
    assert ByteTokenizer("qwen3").chat_template == QWEN3_STYLE
    messages = [{"role": "user", "content": "q"}]
    assert tok.apply_chat_template(messages, chat_template="qwen3", add_generation_prompt=True,
                                   enable_thinking=False, tokenize=False).endswith("<think>\n\n</think>\n\n")
    assert ByteTokenizer().chat_template == CHATML


def test_templates_run_sandboxed():
    evil = ByteTokenizer("{{ messages.__class__.__mro__ }}")
    with pytest.raises(SecurityError):
        evil.apply_chat_template([{"role": "user", "content": "x"}])


def test_raise_exception_is_available_to_templates():
    strict = ByteTokenizer("{% if messages[0].role != 'user' %}{{ raise_exception('user first') }}{% endif %}")
    with pytest.raises(TemplateError, match="user first"):
        strict.apply_chat_template([{"role": "system", "content": "x"}])


def test_tojson_is_plain_json_and_descriptions_are_not_escaped():
    tools = [{"type": "function", "function": {"name": "f", "description": "<a> & 'b' é"}}]
    call = {"function": {"name": "f", "arguments": {"s": "<a> & 'b' é"}}}
    messages = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "", "tool_calls": [call]}]
    text = tok.apply_chat_template(messages, tools=tools, tokenize=False)
    assert "f() - <a> & 'b' é\n" in text
    assert '"arguments": {"s": "<a> & \'b\' é"}' in text


@pytest.mark.parametrize("template", [CHATML, QWEN3_STYLE])
@pytest.mark.parametrize(
    "content, tool_calls",
    [
        ("plain answer", None),
        ("<think>\nhmm\n</think>\n\nanswer", None),
        ("", [{"id": "call_0", "type": "function", "function": {"name": "add", "arguments": '{"a": 2}'}}]),
        ("let me add", [{"function": {"name": "add", "arguments": {"a": 2, "b": [1]}}}]),
    ],
)
def test_assistant_text_is_what_the_template_renders_for_the_newest_turn(template, content, tool_calls):
    t = ByteTokenizer(template)
    history = [{"role": "user", "content": "hi"}]
    reply = {"role": "assistant", "content": content or None, "tool_calls": tool_calls}
    before = t.apply_chat_template(history, add_generation_prompt=True, tokenize=False)
    after = t.apply_chat_template(history + [reply], tokenize=False)
    assert after == before + t.assistant_text(content, tool_calls) + "<|im_end|>\n"
