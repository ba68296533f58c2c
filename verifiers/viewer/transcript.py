"""One rollout record → the blocks of its transcript: scores, then every message, tool call and tool result.

Blocks are plain data (a kind, a title, a body) so the screen decides the styling and tests read the text.
Each body is cut at :data:`MAX_BODY_CHARS` and the transcript at :data:`MAX_MESSAGES` messages, and the cut is
said in the text: a 50 MB completion must not become a 50 MB widget.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from verifiers.parsers.parser import message_text
from verifiers.viewer.printable import as_text

MAX_BODY_CHARS = 20_000
MAX_MESSAGES = 400

Kind = Literal["scores", "error", "system", "user", "assistant", "tool", "tool_call", "other", "note"]
_ROLE_KINDS: dict[str, Kind] = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}


@dataclass(frozen=True)
class Block:
    """One piece of a transcript; ``kind`` picks its style (a message's role, or scores/error/note)."""

    kind: Kind
    title: str
    body: str


def transcript_blocks(record: dict[str, Any]) -> list[Block]:
    """The blocks of one ``results.jsonl`` record, in reading order."""
    blocks = [_scores(record)]
    if record.get("error"):
        blocks.append(Block("error", "rollout error", _cut(_str(record["error"]))))
    for name, text in _mapping(record.get("scoring_errors")).items():
        blocks.append(Block("error", f"reward function {as_text(name)} raised", _cut(_str(text))))
    messages = 0
    for part in ("prompt", "completion"):
        value = record.get(part)
        if isinstance(value, str):  # completion-format environments keep plain text
            blocks.append(Block("user" if part == "prompt" else "assistant", f"{part} (text)", _cut(value)))
            continue
        for message in value if isinstance(value, list) else []:
            messages += 1
            if messages > MAX_MESSAGES:
                total = _count_messages(record)
                blocks.append(Block("note", "cut", f"{total - MAX_MESSAGES:,} more messages not shown "
                                                   f"(the first {MAX_MESSAGES} of {total})"))
                return blocks
            blocks.extend(_message_blocks(message, part))
    if record.get("answer") not in (None, ""):
        blocks.append(Block("other", "answer", _cut(_str(record["answer"]))))
    info = record.get("info")
    if info:
        blocks.append(Block("other", "info", _cut(_json(info))))
    return blocks


def _scores(record: dict[str, Any]) -> Block:
    lines = [f"reward  {_number(record.get('reward'))}"]
    for name, value in sorted(_mapping(record.get("metrics")).items()):
        lines.append(f"  {as_text(name)}  {_number(value)}")
    facts = [f"{key} {as_text(record[key])}" for key in ("num_turns", "stop_condition", "total_completion_tokens",
                                                "tool_errors") if record.get(key) not in (None, "")]
    if record.get("is_truncated"):
        facts.append("truncated")
    if facts:
        lines.append(" · ".join(facts))
    title = (f"example {as_text(record.get('example_id', '?'))} · rollout "
             f"{as_text(record.get('rollout_index', '?'))} · task {as_text(record.get('task', '?'))}")
    return Block("scores", title, "\n".join(lines))


def _message_blocks(message: Any, part: str) -> list[Block]:
    if not isinstance(message, dict):
        return [Block("other", f"{part}: not a message", _cut(_json(message)))]
    role = as_text(message.get("role") or "?")
    kind = _ROLE_KINDS.get(role, "other")
    title = role
    if role == "tool":
        title = "tool result" + "".join(f" · {as_text(message[k])}" for k in ("name", "tool_call_id")
                                        if message.get(k))
    blocks = []
    content = _content_text(message)
    if content or not message.get("tool_calls"):
        blocks.append(Block(kind, title, _cut(content)))
    for call in message.get("tool_calls") or []:
        blocks.append(_tool_call(call))
    return blocks


def _tool_call(call: Any) -> Block:
    if not isinstance(call, dict):
        return Block("tool_call", "tool call", _cut(_json(call)))
    function = call.get("function")
    if not isinstance(function, dict):
        function = call  # 0.3.0's flat form: name and arguments on the call itself
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = _json(arguments)
    call_id = f" · {as_text(call['id'])}" if call.get("id") else ""
    return Block("tool_call", f"tool call{call_id}", _cut(f"{as_text(function.get('name', '?'))}({arguments})"))


def _content_text(message: dict[str, Any]) -> str:
    """A message's text (its text parts, for a list of parts), with every other part named, not dropped."""
    content = message.get("content")
    if content is not None and not isinstance(content, (str, list)):
        return _json(content)
    others = [f"({part.get('type', 'unknown')} part)" for part in content or []
              if isinstance(part, dict) and part.get("type") != "text"] if isinstance(content, list) else []
    return "\n".join(text for text in (message_text(message), *others) if text)


def _count_messages(record: dict[str, Any]) -> int:
    return sum(len(v) for v in (record.get("prompt"), record.get("completion")) if isinstance(v, list))


def _number(value: Any) -> str:
    if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**15):
        return f"{value:.3f}"
    return as_text(value)


def _mapping(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    """Any value as text, never raising (a whole string, unlike :func:`as_text`, which the cut then bounds)."""
    return value if isinstance(value, str) else _json(value)


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=1, default=repr)
    except (ValueError, RecursionError) as error:  # a huge integer; nesting deeper than the encoder goes
        return f"(not shown: {error})"


def _cut(text: str) -> str:
    if len(text) <= MAX_BODY_CHARS:
        return text
    return f"{text[:MAX_BODY_CHARS]}\n… ({len(text) - MAX_BODY_CHARS:,} more characters not shown)"


__all__ = ["MAX_BODY_CHARS", "MAX_MESSAGES", "Block", "Kind", "transcript_blocks"]
