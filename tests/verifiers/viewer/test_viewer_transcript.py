"""A record → transcript blocks: every role, tool calls and results, scores, and the cuts that bound it."""

from __future__ import annotations

from verifiers.viewer import transcript
from verifiers.viewer.transcript import transcript_blocks


def test_a_tool_rollout_shows_scores_messages_calls_and_results(make_rollout) -> None:
    record = make_rollout(3, 1, 1.0, "olleh", error=None)
    record["scoring_errors"] = {"judge": "ZeroDivisionError: x"}
    blocks = transcript_blocks(record)
    kinds = [b.kind for b in blocks]
    assert kinds == ["scores", "error", "system", "user", "tool_call", "tool", "assistant", "other"]
    scores = blocks[0]
    assert scores.title == "example 3 · rollout 1 · task default"
    assert scores.body.splitlines()[:3] == ["reward  1.000", "  exact  1.000", "  length  0.250"]
    assert "num_turns 2" in scores.body
    assert blocks[1].title == "reward function judge raised"
    assert blocks[4].title == "tool call · call_0" and blocks[4].body == 'reverse_word({"w": "x"})'
    assert blocks[5].title == "tool result · call_0" and blocks[5].body == "tool said [red]hi[/red]"
    assert (blocks[6].body, blocks[7].title, blocks[7].body) == ("olleh", "answer", "olleh")


def test_the_rollout_error_comes_right_after_the_scores(make_rollout) -> None:
    blocks = transcript_blocks(make_rollout(0, 0, 0.0, "", error="ModelError: model API failed"))
    assert (blocks[1].kind, blocks[1].body) == ("error", "ModelError: model API failed")


def test_text_prompts_content_parts_and_flat_tool_calls() -> None:
    record = {"prompt": "2+2=", "completion": [
        {"role": "assistant", "content": [{"type": "text", "text": "four"}, {"type": "image_url"}],
         "tool_calls": [{"id": "c1", "name": "calc", "arguments": {"x": 1}}]},
        "not a message",
    ]}
    blocks = transcript_blocks(record)
    assert (blocks[1].title, blocks[1].body) == ("prompt (text)", "2+2=")
    assert blocks[2].body == "four\n(image_url part)"
    assert blocks[3].body.startswith("calc({") and '"x": 1' in blocks[3].body
    assert blocks[4].title == "completion: not a message"


def test_a_long_body_and_many_messages_are_cut_and_say_so() -> None:
    long = "y" * (transcript.MAX_BODY_CHARS + 5)
    many = [{"role": "user", "content": "hi"}] * (transcript.MAX_MESSAGES + 10)
    blocks = transcript_blocks({"prompt": [{"role": "user", "content": long}], "completion": many})
    assert blocks[1].body.endswith("… (5 more characters not shown)")
    assert len(blocks[1].body) < transcript.MAX_BODY_CHARS + 100
    assert blocks[-1].kind == "note"
    assert blocks[-1].body == f"11 more messages not shown (the first {transcript.MAX_MESSAGES} of 411)"
