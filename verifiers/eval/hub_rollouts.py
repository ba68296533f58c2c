"""A run's rollouts as ``vf-eval --push`` sends them to the Hub: bounded, text only, in run order.

Each rollout keeps what its page on the Hub shows: the example and rollout numbers, the reward, each metric,
the error, why it stopped, the answer, and every message of the prompt and completion (role, text, tool calls
with their arguments, the call a tool result answers). Content parts that are not text are named, not sent.
"""

from __future__ import annotations

import json
import math
from typing import Any

# The Hub's limits on pushed rollouts (hub_server/services/eval_rollouts.py; the SDK never imports the Hub):
# rollouts past them are cut here, so a push fits; the Hub refuses what does not.
MAX_ROLLOUTS = 1000
MAX_MESSAGES = 200
MAX_TEXT = 16 * 1024
MAX_ERROR = 4000
ROLLOUT_BYTES = 12 * 1024 * 1024  # of JSON for all rollouts (the Hub takes 16 MiB a request)


def _cut(text: str, limit: int = MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    # The note's length bounded by the widest count it could hold, so text and note stay within ``limit``.
    kept = limit - len(f" … [cut: {len(text)} more characters]")
    return f"{text[:kept]} … [cut: {len(text) - kept} more characters]"


def _text(content: Any) -> str:
    """A message's content as text: a string as is, content parts joined (non-text parts named)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") if isinstance(p, dict) and p.get("type") == "text"
                 else f"[{p.get('type', 'part')}]" if isinstance(p, dict) else str(p) for p in content]
        return "\n".join(parts)
    return str(content)


def _message(message: Any, role: str) -> dict[str, Any]:
    if not isinstance(message, dict):  # completion-format text, or an object the record could not hold
        return {"role": role, "content": _cut(_text(message))}
    calls = []
    for call in (message.get("tool_calls") or [])[:64]:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        arguments = function.get("arguments", "")
        calls.append({"id": _cut(str(call.get("id") or ""), 200) or None,
                      "name": _cut(str(function.get("name", "")), 200),
                      "arguments": _cut(arguments if isinstance(arguments, str) else json.dumps(arguments))})
    found = {"role": _cut(str(message.get("role") or role), 32), "content": _cut(_text(message.get("content"))),
             "tool_calls": calls}
    if message.get("tool_call_id"):
        found["tool_call_id"] = _cut(str(message["tool_call_id"]), 200)
    return found


def _messages(messages: Any, role: str) -> list[dict[str, Any]]:
    items = messages if isinstance(messages, list) else [messages] if messages else []
    shown = [_message(m, role) for m in items[:MAX_MESSAGES]]
    if len(items) > MAX_MESSAGES:
        shown[-1] = {"role": "note", "content": f"[cut: {len(items) - MAX_MESSAGES + 1} more messages]"}
    return shown


def stored_messages(messages: Any, role: str) -> list[dict[str, Any]]:
    """``messages`` as a pushed rollout stores them (cut, tool calls flattened): what the Hub's re-scoring
    compares a pushed prompt against, after shaping the environment's own dataset row the same way."""
    return _messages(messages, role)


def stored_text(value: Any) -> str:
    """An answer as a pushed rollout stores it (as text, cut)."""
    return _cut(_text(value))


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def rollout_records(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's rollouts as the Hub stores them: at most ``MAX_ROLLOUTS``, in run order, each message cut to
    ``MAX_TEXT`` characters, all of them under ``ROLLOUT_BYTES`` of JSON (the rest are left out)."""
    records: list[dict[str, Any]] = []
    size = 0
    for output in outputs[:MAX_ROLLOUTS]:
        metrics = output.get("metrics")
        if not isinstance(metrics, dict):
            metrics = {}
        error = output.get("error")
        record = {
            "example_id": int(output.get("example_id") or 0), "rollout_index": int(output.get("rollout_index") or 0),
            "reward": _number(output.get("reward")),
            "metrics": {_cut(str(k), 200): _number(v) for k, v in list(metrics.items())[:100]},
            "error": _cut(str(error), MAX_ERROR) if error else None,
            "stop_condition": _cut(str(output["stop_condition"]), 100) if output.get("stop_condition") else None,
            "answer": _cut(_text(output.get("answer"))),
            "prompt": _messages(output.get("prompt"), "prompt"),
            "completion": _messages(output.get("completion"), "completion"),
        }
        size += len(json.dumps(record))
        if size > ROLLOUT_BYTES:
            break
        records.append(record)
    return records


__all__ = ["MAX_ROLLOUTS", "ROLLOUT_BYTES", "rollout_records", "stored_messages", "stored_text"]
