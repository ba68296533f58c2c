"""The OpenAI-compatible routes of the scripted server, over a policy and the byte tokenizer.

Response bodies follow the OpenAI API plus the vLLM extensions training code reads
(``prompt_token_ids``, ``choices[0].token_ids``, ``"token_id:<id>"`` logprob tokens).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections import deque
from typing import Any

from verifiers.http.http11 import HttpRequest
from verifiers.testing.policies import Policy, Reply, ScriptedRequest, content_text
from verifiers.tokens.byte_tokenizer import ByteTokenizer

logger = logging.getLogger(__name__)

# A JSON payload, or raw body bytes (a policy's deliberately malformed reply).
Response = tuple[int, dict[str, Any] | bytes]

# Request fields that shape the request object; everything else is a sampling parameter.
_STRUCTURAL = frozenset({"model", "messages", "prompt", "tools"})


class BadRequest(Exception):
    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def error_body(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    """An OpenAI-shaped error, which the SDK turns into the matching ``openai.APIStatusError``."""
    kind = "invalid_request_error" if 400 <= status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": param, "code": status}}


def pseudo_logprob(token_id: int, position: int) -> float:
    """A deterministic stand-in logprob in (-5, 0], from the token and its position."""
    return -((token_id * 2654435761 + position * 40503 + 12345) % 5000) / 1000.0


class ScriptedApi:
    """Routes requests to the policy; holds the counters the server reports."""

    def __init__(
        self,
        policy: Policy,
        tokenizer: ByteTokenizer,
        model: str,
        delay_s: float = 0.0,
        fail_first: int = 0,
        fail_status: int = 503,
    ) -> None:
        self.policy = policy
        self.tokenizer = tokenizer
        self.model = model
        self.delay_s = delay_s
        self.fail_status = fail_status
        self.failures_left = fail_first
        self.policy_errors = 0
        self.recent_requests: deque[ScriptedRequest] = deque(maxlen=256)
        self._ids = 0

    async def handle(self, request: HttpRequest) -> Response:
        route = (request.method, request.path.rstrip("/"))
        if route == ("POST", "/v1/chat/completions"):
            return await self._generate(request, "chat")
        if route == ("POST", "/v1/completions"):
            return await self._generate(request, "completion")
        if route == ("GET", "/v1/models"):
            data = [{"id": self.model, "object": "model", "created": 0, "owned_by": "scripted"}]
            return 200, {"object": "list", "data": data}
        if route in {("GET", "/health"), ("GET", "/v1/health")}:
            return 200, {"status": "ok"}
        known = {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health"}
        if route[1] in known:
            return 405, error_body(405, f"method {request.method} not allowed on {request.path}")
        return 404, error_body(404, f"no route {request.method} {request.path}")

    async def _generate(self, http: HttpRequest, kind: str) -> Response:
        try:
            body = json.loads(http.body)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            return 400, error_body(400, f"request body is not valid JSON: {e}")
        if not isinstance(body, dict):
            return 400, error_body(400, "request body must be a JSON object")
        delay = self.delay_s + _header_float(http.headers, "x-scripted-delay")
        fault = int(_header_float(http.headers, "x-scripted-fault"))
        if fault and not 400 <= fault < 600:
            return 400, error_body(400, f"X-Scripted-Fault must be an error status (400-599), got {fault}")
        if not fault and self.failures_left > 0:
            self.failures_left -= 1
            fault = self.fail_status
        if fault:
            await asyncio.sleep(delay)
            return fault, error_body(fault, f"scripted fault {fault}")
        try:
            request = self._parse(body, kind, http.headers)
        except BadRequest as e:
            return 400, error_body(400, str(e), e.param)
        self.recent_requests.append(request)
        replies = []
        for _ in range(int(body.get("n") or 1)):  # n replies: the policy is asked once for each, as for n requests
            try:
                replies.append(await self._ask_policy(request))
            except Exception as e:  # a policy bug must answer 500, not kill the server; counted and logged
                self.policy_errors += 1
                logger.exception("scripted policy raised")
                return 500, error_body(500, f"policy raised {type(e).__name__}: {e}")
        await asyncio.sleep(delay + max(r.delay_s for r in replies))
        for reply in replies:
            if reply.raw_body is not None:
                return reply.status, reply.raw_body
            if reply.status != 200:
                return reply.status, error_body(reply.status, reply.content or f"scripted status {reply.status}")
        self._ids += 1
        make = self._chat_body if kind == "chat" else self._completion_body
        bodies = [make(request, reply) for reply in replies]
        return 200, _one_body(bodies)

    def _parse(self, body: dict[str, Any], kind: str, headers: dict[str, str]) -> ScriptedRequest:
        n = body.get("n")
        if n is not None and (not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 128):
            raise BadRequest(f"n must be an integer from 1 to 128, got {n!r}", "n")
        if body.get("stream"):
            raise BadRequest("the scripted server does not stream", "stream")
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise BadRequest(f"max_tokens must be a positive integer, got {limit!r}", "max_tokens")
        sampling = {k: v for k, v in body.items() if k not in _STRUCTURAL}
        model = str(body.get("model") or self.model)
        tools = body.get("tools") or []
        if not isinstance(tools, list):
            raise BadRequest("tools must be a list", "tools")
        if kind == "chat":
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
                raise BadRequest("messages must be a non-empty list of message objects", "messages")
            return ScriptedRequest("chat", model, messages=messages, tools=tools, sampling=sampling,
                                   headers=headers, tokenizer=self.tokenizer)
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            prompt = prompt[0]
        if not isinstance(prompt, str):
            raise BadRequest("prompt must be a string", "prompt")
        return ScriptedRequest("completion", model, prompt=prompt, sampling=sampling, headers=headers,
                               tokenizer=self.tokenizer)

    async def _ask_policy(self, request: ScriptedRequest) -> Reply:
        reply = self.policy(request)
        if inspect.isawaitable(reply):
            reply = await reply
        if isinstance(reply, str):
            return Reply(reply)
        if not isinstance(reply, Reply):
            raise TypeError(f"a policy must return a Reply or a str, got {type(reply).__name__}")
        return reply

    # -- bodies -----------------------------------------------------------------------

    def _chat_body(self, request: ScriptedRequest, reply: Reply) -> dict[str, Any]:
        tool_calls = [_tool_call(call, i) for i, call in enumerate(reply.tool_calls or ())]
        content = _cut_at_stop(reply.content, request.sampling.get("stop"))
        text = self.tokenizer.assistant_text(content, tool_calls)
        ids, finish = self._completion_ids(request, text, reply, end_id=self.tokenizer.eos_token_id)
        if finish == "length":
            content, tool_calls = self.tokenizer.decode(ids), []
        elif tool_calls and reply.finish_reason is None:
            finish = "tool_calls"
        message: dict[str, Any] = {"role": "assistant", "content": content if content or not tool_calls else None}
        if tool_calls:
            message["tool_calls"] = tool_calls
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        if request.sampling.get("logprobs"):
            top = int(request.sampling.get("top_logprobs") or 0)
            choice["logprobs"] = {"content": [self._logprob_entry(request, t, i, top) for i, t in enumerate(ids)]}
        return self._envelope(request, "chat.completion", "chatcmpl", choice, ids)

    def _completion_body(self, request: ScriptedRequest, reply: Reply) -> dict[str, Any]:
        # Completions carry no end token, so a multi-turn completion prompt re-tokenizes to the same ids.
        text = _cut_at_stop(reply.content, request.sampling.get("stop"))
        ids, finish = self._completion_ids(request, text, reply, end_id=None)
        if finish == "length":
            text = self.tokenizer.decode(ids)
        choice: dict[str, Any] = {"index": 0, "text": text, "finish_reason": finish, "logprobs": None}
        top = request.sampling.get("logprobs")
        if top is not None and top is not False:
            entries = [self._logprob_entry(request, t, i, int(top)) for i, t in enumerate(ids)]
            offsets, offset = [], 0
            for t in ids:
                offsets.append(offset)
                offset += len(self.tokenizer.token_bytes(t))
            alternatives = [{a["token"]: a["logprob"] for a in e["top_logprobs"]} for e in entries]
            choice["logprobs"] = {
                "tokens": [e["token"] for e in entries],
                "token_logprobs": [e["logprob"] for e in entries],
                "top_logprobs": alternatives if top else None,
                "text_offset": offsets,
            }
        body = self._envelope(request, "text_completion", "cmpl", choice, ids)
        if "prompt_token_ids" in body:
            choice["prompt_token_ids"] = body["prompt_token_ids"]  # where vLLM puts it for completions
        return body

    def _completion_ids(
        self, request: ScriptedRequest, text: str, reply: Reply, end_id: int | None
    ) -> tuple[list[int], str]:
        ids = self.tokenizer.encode(text)
        finish = reply.finish_reason or "stop"
        if end_id is not None and finish != "length":
            ids.append(end_id)
        limit = request.sampling.get("max_completion_tokens", request.sampling.get("max_tokens"))
        if limit is not None and len(ids) > limit:
            ids, finish = ids[:limit], "length"
        return ids, finish

    def _envelope(
        self, request: ScriptedRequest, obj: str, prefix: str, choice: dict[str, Any], ids: list[int]
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": f"{prefix}-scripted-{self._ids}",
            "object": obj,
            "created": int(time.time()),
            "model": request.model,
            "choices": [choice],
        }
        if request.sampling.get("return_token_ids"):
            prompt_ids = self.tokenizer.encode(request.prompt_text)
            body["prompt_token_ids"] = prompt_ids
            choice["token_ids"] = ids
            prompt_tokens = len(prompt_ids)
        else:
            prompt_tokens = _prompt_bytes(request)
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(ids),
            "total_tokens": prompt_tokens + len(ids),
        }
        return body

    def _logprob_entry(self, request: ScriptedRequest, token_id: int, position: int, top: int) -> dict[str, Any]:
        as_ids = bool(request.sampling.get("return_tokens_as_token_ids"))
        logprob = pseudo_logprob(token_id, position)
        alternatives = [(token_id, logprob)] + [
            ((token_id + j) % self.tokenizer.vocab_size, logprob - j) for j in range(1, top)
        ]
        entry = self._token_entry(token_id, logprob, as_ids)
        entry["top_logprobs"] = [self._token_entry(t, lp, as_ids) for t, lp in alternatives[:top]]
        return entry

    def _token_entry(self, token_id: int, logprob: float, as_ids: bool) -> dict[str, Any]:
        token = f"token_id:{token_id}" if as_ids else self.tokenizer.convert_ids_to_tokens(token_id)
        return {"token": token, "logprob": logprob, "bytes": list(self.tokenizer.token_bytes(token_id))}


def _one_body(bodies: list[dict[str, Any]]) -> dict[str, Any]:
    """The response to a request with ``n`` replies: the first body, carrying every body's choice in order."""
    body = bodies[0]
    body["choices"] = [{**b["choices"][0], "index": i} for i, b in enumerate(bodies)]
    completion = sum(b["usage"]["completion_tokens"] for b in bodies)
    body["usage"] = {**body["usage"], "completion_tokens": completion,
                     "total_tokens": body["usage"]["prompt_tokens"] + completion}
    return body


def _tool_call(call: dict[str, Any], index: int) -> dict[str, Any]:
    fn = call.get("function", call)
    args = fn.get("arguments", {})
    return {
        "id": call.get("id") or f"call_{index}",
        "type": "function",
        "function": {"name": fn.get("name", ""), "arguments": args if isinstance(args, str) else json.dumps(args)},
    }


def _cut_at_stop(text: str, stop: str | list[str] | None) -> str:
    """Cut ``text`` before the first stop string, as OpenAI servers do."""
    if not stop:
        return text
    cuts = [i for s in ([stop] if isinstance(stop, str) else stop) if s and (i := text.find(s)) >= 0]
    return text[: min(cuts)] if cuts else text


def _prompt_bytes(request: ScriptedRequest) -> int:
    if request.kind == "completion":
        return len(request.prompt.encode())
    return sum(len(content_text(m.get("content")).encode()) for m in request.messages)


def _header_float(headers: dict[str, str], name: str) -> float:
    value = headers.get(name)
    if value is None:
        return 0.0
    try:
        return float(value)
    except ValueError:
        logger.warning("ignoring bad %s header %r", name, value)
        return 0.0


__all__ = ["BadRequest", "ScriptedApi", "error_body", "pseudo_logprob"]
