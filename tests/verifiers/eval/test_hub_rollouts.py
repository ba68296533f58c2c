"""What ``vf-eval --push`` sends of a run's rollouts: every result shape cut to the Hub's limits, never refused."""

from __future__ import annotations

import json
import math

from verifiers.eval import hub_rollouts
from verifiers.eval.hub_rollouts import MAX_ROLLOUTS, rollout_records


def output(**changes: object) -> dict[str, object]:
    return {"example_id": 3, "rollout_index": 1, "reward": 0.5, "metrics": {"m": 0.5}, "error": None,
            "stop_condition": "no_tools_called", "answer": "42",
            "prompt": [{"role": "user", "content": "q"}], "completion": [{"role": "assistant", "content": "a"}],
            **changes}


def test_a_chat_rollout_keeps_its_messages_tool_calls_and_scores() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}
    [record] = rollout_records([output(completion=[
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": "2", "tool_call_id": "c1"},
        {"role": "assistant", "content": [{"type": "text", "text": "it is"}, {"type": "image_url", "image_url": {}}]},
    ])])
    assert record["example_id"] == 3 and record["rollout_index"] == 1 and record["reward"] == 0.5
    assert record["completion"] == [
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "add", "arguments": '{"a": 1}'}]},
        {"role": "tool", "content": "2", "tool_calls": [], "tool_call_id": "c1"},
        {"role": "assistant", "content": "it is\n[image_url]", "tool_calls": []},
    ]


def test_completion_format_text_and_odd_values_become_text_and_null() -> None:
    [record] = rollout_records([output(prompt="2 + 2 =", completion=" 4", reward=math.nan,
                                       metrics={"m": math.inf, "n": "x"}, error=ValueError("bad"), answer=None)])
    assert record["prompt"] == [{"role": "prompt", "content": "2 + 2 ="}]
    assert record["completion"] == [{"role": "completion", "content": " 4"}]
    assert record["reward"] is None and record["metrics"] == {"m": None, "n": None}
    assert record["error"] == "bad" and record["answer"] == ""
    json.dumps(record, allow_nan=False)  # strict JSON: the Hub refuses NaN


def test_long_texts_and_long_conversations_are_cut_with_a_note() -> None:
    turns = [{"role": "user", "content": "x" * 20_000}] * 250
    [record] = rollout_records([output(prompt=turns)])
    assert len(record["prompt"]) == hub_rollouts.MAX_MESSAGES
    assert record["prompt"][-1] == {"role": "note", "content": "[cut: 51 more messages]"}
    first = record["prompt"][0]["content"]
    kept, note = first.split(" … ")
    assert set(kept) == {"x"} and note == f"[cut: {20_000 - len(kept)} more characters]"
    assert len(first) <= hub_rollouts.MAX_TEXT


def test_at_most_the_limit_of_rollouts_and_bytes(monkeypatch) -> None:
    assert len(rollout_records([output()] * (MAX_ROLLOUTS + 5))) == MAX_ROLLOUTS
    one = len(json.dumps(rollout_records([output()])[0]))
    monkeypatch.setattr(hub_rollouts, "ROLLOUT_BYTES", one * 3 + 1)
    assert len(rollout_records([output()] * 10)) == 3
