"""What the scripted server answers: a policy maps a request to a :class:`Reply`.

A policy is any callable ``(ScriptedRequest) -> Reply | str`` (sync or async).
Built-in policies are named by a short spec string, ``name[:arg]``:

=================  ==========================================================
``echo``           repeats the last user message
``reverse[:p]``    reverses the last user message; with probability ``p``
                   (seeded by the prompt, so repeatable) answers it unreversed
``tools[:N]``      calls the request's tools (one call per turn, ``N`` turns),
                   then answers with the last tool result
``turns[:N]``      answers ``turn k`` (k = assistant turns so far + 1), ``done`` after N
``script:FILE``    canned replies from a JSON object {last user text: reply, "*": default}
``math:FILE``      ``\\boxed{answer}`` from a JSON answer key {question: answer}
=================  ==========================================================
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from verifiers.errors import UsageError

if TYPE_CHECKING:
    from verifiers.tokens.byte_tokenizer import ByteTokenizer


@dataclass
class Reply:
    """A scripted answer.

    ``finish_reason`` defaults to ``"tool_calls"`` when there are tool calls, else
    ``"stop"`` (the server sets ``"length"`` itself when ``max_tokens`` cuts the reply).
    ``status`` other than 200 answers with an OpenAI-shaped error instead (fault injection),
    whose message is ``content`` when given (e.g. a context-length error text);
    ``delay_s`` waits before answering (client timeouts). ``raw_body`` sends exactly those bytes
    as the response body, with ``status`` and a JSON content type, instead of a completion: a
    malformed reply from a broken server or proxy (``b"<html>"``, a cut-off JSON object).
    """

    content: str = ""
    tool_calls: list[dict[str, Any]] | None = None
    finish_reason: Literal["stop", "length", "tool_calls"] | None = None
    delay_s: float = 0.0
    status: int = 200
    raw_body: bytes | None = None


@dataclass
class ScriptedRequest:
    """One parsed model request, as a policy sees it."""

    kind: Literal["chat", "completion"]
    model: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    prompt: str = ""
    tools: list[dict[str, Any]] = field(default_factory=list)
    sampling: dict[str, Any] = field(default_factory=dict)
    """Every other body field: temperature, max_tokens, logprobs, extra_body keys..."""
    headers: dict[str, str] = field(default_factory=dict)
    tokenizer: ByteTokenizer | None = field(default=None, repr=False)

    @property
    def last_user_text(self) -> str:
        """Text of the last user message (the prompt itself for completions)."""
        if self.kind == "completion":
            return self.prompt
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return content_text(message.get("content"))
        return ""

    @property
    def assistant_turns(self) -> int:
        return sum(1 for m in self.messages if m.get("role") == "assistant")

    @cached_property
    def prompt_text(self) -> str:
        """The prompt as the model reads it: the chat-templated conversation, or the completion prompt."""
        if self.kind == "completion" or self.tokenizer is None:
            return self.prompt
        text = self.tokenizer.apply_chat_template(
            self.messages, tools=self.tools or None, add_generation_prompt=True, tokenize=False
        )
        assert isinstance(text, str)
        return text


Policy = Callable[[ScriptedRequest], "Reply | str | Awaitable[Reply | str]"]


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


# -- built-in policies --------------------------------------------------------------


def echo() -> Policy:
    """Repeat the last user message."""
    return lambda request: Reply(request.last_user_text)


def reverse(noise: float = 0.0) -> Policy:
    """Reverse the last user message; with probability ``noise`` answer it unreversed.

    The coin is seeded by the text, so a run's mean reward is repeatable.
    """
    if not 0.0 <= noise <= 1.0:
        raise UsageError(f"reverse noise must be in [0, 1], got {noise}")

    def policy(request: ScriptedRequest) -> Reply:
        text = request.last_user_text
        corrupted = zlib.crc32(text.encode()) / 2**32 < noise
        return Reply(text if corrupted else text[::-1])

    return policy


def tools(max_turns: int = 1) -> Policy:
    """Call the request's tools, one call per turn for ``max_turns`` turns, then answer with the last result.

    Turn ``j`` calls tool ``j mod len(tools)`` with arguments built from its JSON
    schema (:func:`example_arguments`). Without tools it echoes the last user message.
    """
    if max_turns < 0:
        raise UsageError(f"tools turns must be >= 0, got {max_turns}")

    def policy(request: ScriptedRequest) -> Reply:
        if not request.tools:
            return Reply(request.last_user_text)
        since_user = _messages_since_last_user(request.messages)
        calls_made = sum(1 for m in since_user if m.get("role") == "assistant" and m.get("tool_calls"))
        if calls_made >= max_turns:
            results = [m for m in since_user if m.get("role") == "tool"]
            return Reply(content_text(results[-1].get("content")) if results else request.last_user_text)
        fn = request.tools[calls_made % len(request.tools)].get("function", {})
        earlier_calls = sum(len(m.get("tool_calls") or ()) for m in request.messages)
        call = {
            "id": f"call_{earlier_calls}",
            "type": "function",
            "function": {"name": fn.get("name", ""), "arguments": json.dumps(example_arguments(fn.get("parameters")))},
        }
        return Reply("", tool_calls=[call])

    return policy


def turns(n: int = 3) -> Policy:
    """Answer ``turn k`` where k = assistant turns so far + 1; ``done`` once k > n."""

    def policy(request: ScriptedRequest) -> Reply:
        k = request.assistant_turns + 1
        return Reply(f"turn {k}" if k <= n else "done")

    return policy


def script(replies: Mapping[str, str | Mapping[str, Any]], default: str | None = None) -> Policy:
    """Canned replies keyed by the last user message; key ``"*"`` (or ``default``) answers the rest.

    A value is a reply text or a mapping of :class:`Reply` fields.
    """
    table = {key.strip(): _as_reply(value) for key, value in replies.items()}
    fallback = Reply(default) if default is not None else table.pop("*", Reply(""))
    return lambda request: table.get(request.last_user_text.strip(), fallback)


def math(answers: Mapping[str, Any]) -> Policy:
    """Answer ``\\boxed{X}`` where X is the answer key's entry for the question.

    The question is the last user message; when no key matches it exactly, the
    first key contained in it is used (prompts often wrap the question in instructions).
    """
    key = {str(q).strip(): str(a) for q, a in answers.items()}

    def policy(request: ScriptedRequest) -> Reply:
        text = request.last_user_text.strip()
        answer = key.get(text)
        if answer is None:
            answer = next((a for q, a in key.items() if q and q in text), "unknown")
        return Reply(f"\\boxed{{{answer}}}")

    return policy


def example_arguments(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Deterministic simple arguments for a JSON schema: small ints, ``"x"``, ``True``, first enum value."""
    properties = (schema or {}).get("properties") or {}
    return {name: _example_value(spec, i) for i, (name, spec) in enumerate(properties.items())}


def _example_value(spec: Mapping[str, Any], position: int) -> Any:
    if "default" in spec:
        return spec["default"]
    if spec.get("enum"):
        return spec["enum"][0]
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind in ("integer", "number"):
        return position + 2
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return example_arguments(spec)
    return "x"


def _messages_since_last_user(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            return messages[i + 1 :]
    return messages


def _as_reply(value: str | Mapping[str, Any]) -> Reply:
    if isinstance(value, str):
        return Reply(value)
    try:
        return Reply(**value)
    except TypeError as e:
        raise UsageError(f"bad scripted reply {value!r}: {e}") from None


# -- resolving a spec ---------------------------------------------------------------


def _load_json(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise UsageError(f"cannot read policy file {path!r}: {e}") from e
    if not isinstance(data, dict):
        raise UsageError(f"policy file {path!r} must hold a JSON object")
    return data


def _number(text: str, cast: Callable[[str], Any], spec: str) -> Any:
    try:
        return cast(text)
    except ValueError:
        raise UsageError(f"bad argument in policy spec {spec!r}") from None


def resolve_policy(spec: str | Policy) -> Policy:
    """A callable is returned as is; a string ``name[:arg]`` names a built-in policy."""
    if callable(spec):
        return spec
    if not isinstance(spec, str):
        raise UsageError(f"a policy is a callable or a spec string, got {type(spec).__name__}")
    name, _, arg = spec.partition(":")
    if name == "echo" and not arg:
        return echo()
    if name == "reverse":
        return reverse(_number(arg, float, spec) if arg else 0.0)
    if name == "tools":
        return tools(_number(arg, int, spec) if arg else 1)
    if name == "turns":
        return turns(_number(arg, int, spec) if arg else 3)
    if name == "script" and arg:
        return script(_load_json(arg))
    if name == "math" and arg:
        return math(_load_json(arg))
    raise UsageError(
        f"unknown policy {spec!r}; use echo, reverse[:p], tools[:N], turns[:N], script:FILE, math:FILE or a callable"
    )


__all__ = [
    "Policy",
    "Reply",
    "ScriptedRequest",
    "content_text",
    "echo",
    "example_arguments",
    "math",
    "resolve_policy",
    "reverse",
    "script",
    "tools",
    "turns",
]
