"""Built-in scripted policies, called directly on request objects."""

from __future__ import annotations

import json

import pytest

from verifiers.errors import UsageError
from verifiers.testing import ByteTokenizer, Reply, ScriptedRequest, policies, resolve_policy

ADD_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "number"}, "note": {"type": "string"},
                           "mode": {"enum": ["fast", "slow"]}, "flag": {"type": ["null", "boolean"]}},
        },
    },
}
SEARCH_TOOL = {"type": "function", "function": {"name": "search", "parameters": {"properties": {"q": {}}}}}


def chat(*messages: dict, tools: list | None = None) -> ScriptedRequest:
    return ScriptedRequest("chat", "m", messages=list(messages), tools=tools or [], tokenizer=ByteTokenizer())


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def test_echo_repeats_the_last_user_message():
    request = chat(user("first"), {"role": "assistant", "content": "x"}, user([{"type": "text", "text": "second"}]))
    assert resolve_policy("echo")(request) == Reply("second")


def test_completion_requests_use_the_prompt():
    request = ScriptedRequest("completion", "m", prompt="abc")
    assert resolve_policy("reverse")(request).content == "cba"
    assert request.prompt_text == "abc"


def test_prompt_text_is_the_templated_conversation():
    assert chat(user("hi")).prompt_text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_reverse_noise_is_seeded_by_the_prompt():
    noisy = resolve_policy("reverse:0.5")
    texts = [f"sentence number {i}" for i in range(400)]
    first = [noisy(chat(user(t))).content for t in texts]
    assert first == [noisy(chat(user(t))).content for t in texts]
    corrupted = sum(out == t for out, t in zip(first, texts))
    assert 120 < corrupted < 280
    assert all(resolve_policy("reverse:0")(chat(user(t))).content == t[::-1] for t in texts[:20])
    assert all(resolve_policy("reverse:1")(chat(user(t))).content == t for t in texts[:20])


def test_tools_calls_then_answers_with_the_tool_result():
    policy = resolve_policy("tools")
    first = policy(chat(user("add them"), tools=[ADD_TOOL]))
    assert first.content == "" and first.tool_calls is not None
    (call,) = first.tool_calls
    assert call["id"] == "call_0" and call["function"]["name"] == "add"
    assert json.loads(call["function"]["arguments"]) == {"a": 2, "b": 3, "note": "x", "mode": "fast", "flag": True}
    after = policy(chat(user("add them"), {"role": "assistant", "content": None, "tool_calls": [call]},
                        {"role": "tool", "tool_call_id": "call_0", "content": "5"}, tools=[ADD_TOOL]))
    assert after == Reply("5")


def test_tools_makes_one_call_per_turn_cycling_through_tools():
    policy = resolve_policy("tools:2")
    messages = [user("go")]
    names = []
    for _ in range(3):
        reply = policy(chat(*messages, tools=[ADD_TOOL, SEARCH_TOOL]))
        if not reply.tool_calls:
            break
        names.append(reply.tool_calls[0]["function"]["name"])
        messages += [{"role": "assistant", "content": None, "tool_calls": reply.tool_calls},
                     {"role": "tool", "tool_call_id": reply.tool_calls[0]["id"], "content": f"r{len(names)}"}]
    assert names == ["add", "search"]
    assert reply == Reply("r2")
    assert messages[3]["tool_calls"][0]["id"] == "call_1"


def test_tools_without_tools_echoes():
    assert resolve_policy("tools")(chat(user("plain"))) == Reply("plain")


def test_turns_counts_assistant_turns():
    policy = resolve_policy("turns:2")
    history = [user("a")]
    answers = []
    for _ in range(3):
        answers.append(policy(chat(*history)).content)
        history += [{"role": "assistant", "content": answers[-1]}, user("next")]
    assert answers == ["turn 1", "turn 2", "done"]


def test_script_replies_by_last_user_message(tmp_path):
    table = {"hi": "hello", "call": {"content": "", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]},
             "*": "fallback"}
    path = tmp_path / "script.json"
    path.write_text(json.dumps(table))
    policy = resolve_policy(f"script:{path}")
    assert policy(chat(user(" hi "))) == Reply("hello")
    assert policy(chat(user("call"))).tool_calls == [{"function": {"name": "f", "arguments": "{}"}}]
    assert policy(chat(user("other"))) == Reply("fallback")
    assert policies.script({"a": "b"}, default="d")(chat(user("z"))) == Reply("d")


def test_math_answers_from_the_key(tmp_path):
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"What is 2+2?": 4}))
    policy = resolve_policy(f"math:{path}")
    assert policy(chat(user("What is 2+2?"))) == Reply("\\boxed{4}")
    assert policy(chat(user("Solve step by step.\nWhat is 2+2?"))) == Reply("\\boxed{4}")
    assert policy(chat(user("What is 3+3?"))) == Reply("\\boxed{unknown}")


def test_callables_pass_through():
    def mine(request: ScriptedRequest) -> str:
        return "x"

    assert resolve_policy(mine) is mine


@pytest.mark.parametrize("spec", ["nope", "reverse:abc", "reverse:2", "tools:-1", "tools:x", "script", "math:",
                                  "echo:1"])
def test_bad_specs_are_usage_errors(spec):
    with pytest.raises(UsageError):
        resolve_policy(spec)


def test_bad_files_and_replies_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="cannot read"):
        resolve_policy(f"script:{tmp_path / 'missing.json'}")
    (tmp_path / "list.json").write_text("[1]")
    with pytest.raises(UsageError, match="JSON object"):
        resolve_policy(f"math:{tmp_path / 'list.json'}")
    with pytest.raises(UsageError, match="bad scripted reply"):
        policies.script({"a": {"text": "wrong field"}})
    with pytest.raises(UsageError):
        resolve_policy(42)  # type: ignore[arg-type]
