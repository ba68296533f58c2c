"""The two chat templates: CHATML never rewrites history, QWEN3_STYLE drops old think blocks."""

from __future__ import annotations

from verifiers.testing import CHATML, QWEN3_STYLE, ByteTokenizer

THINK_1 = "<think>\nfirst thoughts\n</think>\n\nanswer 1"
THINK_2 = "<think>\nsecond thoughts\n</think>\n\nanswer 2"
CALL = {"id": "call_0", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
TOOLS = [{"type": "function", "function": {"name": "add", "description": "Add two integers.", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}}]

CONVERSATION = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "q1"},
    {"role": "assistant", "content": THINK_1},
    {"role": "user", "content": "q2"},
    {"role": "assistant", "content": THINK_2, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_0", "content": "5"},
    {"role": "assistant", "content": "done"},
]


def render(template: str, messages: list[dict], **kwargs) -> str:
    text = ByteTokenizer(template).apply_chat_template(messages, tools=TOOLS, tokenize=False, **kwargs)
    assert isinstance(text, str)
    return text


def test_chatml_is_prefix_monotone():
    for k in range(1, len(CONVERSATION)):
        shorter = render(CHATML, CONVERSATION[:k], add_generation_prompt=CONVERSATION[k]["role"] == "assistant")
        assert render(CHATML, CONVERSATION[: k + 1]).startswith(shorter)


def test_chatml_keeps_every_think_block():
    text = render(CHATML, CONVERSATION)
    assert THINK_1 in text and THINK_2 in text


def test_qwen3_style_drops_think_blocks_before_the_last_user_message():
    text = render(QWEN3_STYLE, CONVERSATION)
    assert "first thoughts" not in text
    assert "<|im_start|>assistant\nanswer 1<|im_end|>" in text
    # The turn after the last user message keeps its reasoning, tool results don't count as users.
    assert THINK_2 in text


def test_qwen3_style_rewrites_history_once_a_user_replies():
    before = render(QWEN3_STYLE, CONVERSATION[:3])
    after = render(QWEN3_STYLE, CONVERSATION[:4])
    assert "first thoughts" in before
    assert not after.startswith(before)


def test_qwen3_style_without_thinking_prefills_an_empty_think_block():
    text = render(QWEN3_STYLE, CONVERSATION[:2], add_generation_prompt=True, enable_thinking=False)
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_tools_join_the_system_turn_and_calls_render_as_tool_call_blocks():
    text = render(CHATML, CONVERSATION)
    assert text.startswith("<|im_start|>system\nsys\n\n# Tools\n")
    assert text.count("<|im_start|>system") == 1
    assert "\n# Tools\nadd(a: integer, b: integer) - Add two integers.\nCall one as <tool_call>" in text
    assert '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call><|im_end|>' in text
    assert "<|im_start|>tool\n<tool_response>\n5\n</tool_response><|im_end|>" in text


def test_content_parts_render_their_text():
    parts = [{"type": "text", "text": "a"}, {"type": "image_url"}, {"type": "text", "text": "b"}]
    messages = [{"role": "user", "content": parts}]
    assert ByteTokenizer().apply_chat_template(messages, tokenize=False) == "<|im_start|>user\nab<|im_end|>\n"


def test_a_tool_without_parameters_or_description_is_listed_by_name():
    tools = [{"type": "function", "function": {"name": "ping"}}, {"name": "bare", "parameters": {"type": "object"}}]
    text = ByteTokenizer().apply_chat_template(CONVERSATION[1:2], tools=tools, tokenize=False)
    assert "# Tools\nping()\nbare()\nCall one as" in text


def test_no_tools_means_no_tool_section():
    text = ByteTokenizer().apply_chat_template(CONVERSATION[:2], tokenize=False)
    assert "# Tools" not in text
