"""JudgeRubric: score with another model's verdict.

The rubric offers a ``judge`` coroutine to its reward functions; the judge
fills :data:`DEFAULT_JUDGE_PROMPT` (or your own template with ``{question}``,
``{answer}`` and ``{response}``) and returns the judge model's raw text::

    rubric = vf.JudgeRubric(judge_client=AsyncOpenAI(base_url=..., api_key=...), judge_model="m")

    async def judged_correct(judge, prompt, completion, answer, state) -> float:
        verdict = await judge(prompt, completion, answer, state)
        return 1.0 if "yes" in verdict.lower() else 0.0

    rubric.add_reward_func(judged_correct)

Verdicts are cached per rollout in ``state["judge_response"]`` keyed by the
filled prompt, so several reward functions can share one judge call.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, MutableMapping
from typing import Any

from openai import APIError, AsyncOpenAI, OpenAI, OpenAIError

from verifiers.awaitables import maybe_await
from verifiers.errors import ModelError
from verifiers.parsers.parser import Parser, message_text
from verifiers.rubrics.rubric import Rubric

DEFAULT_JUDGE_PROMPT = """You are checking a response against a reference answer.

Question:
{question}

Reference answer:
{answer}

Response:
{response}

Does the response arrive at the same final answer as the reference? Differences in \
wording, formatting or working do not matter; only the final answer does.
Reply with exactly one word: "yes" or "no"."""


class JudgeError(ModelError, RuntimeError):
    """The judge model could not be reached or gave no answer (a RuntimeError, as in classic verifiers)."""


class JudgeRubric(Rubric):
    """A rubric whose reward functions can ask a judge model (see the module docstring).

    Args:
        judge_client: an ``AsyncOpenAI`` (or sync ``OpenAI``) client; by default
            ``AsyncOpenAI()`` from the environment (``OPENAI_API_KEY``), created
            when first needed if the key is not set yet.
        judge_model: the judge's model name.
        judge_sampling_args: extra arguments for ``chat.completions.create`` (see :func:`judge_request_args`).
        judge_prompt: template with ``{question}``, ``{answer}``, ``{response}``.
        parallelize_scoring: False by default, to spare the judge's rate limit.
    """

    def __init__(
        self,
        parser: Parser | None = None,
        parallelize_scoring: bool = False,
        judge_client: AsyncOpenAI | OpenAI | None = None,
        judge_model: str = "gpt-4.1-nano",
        judge_sampling_args: dict[str, Any] | None = None,
        judge_prompt: str = DEFAULT_JUDGE_PROMPT,
        **kwargs: Any,
    ) -> None:
        super().__init__(parser=parser, parallelize_scoring=parallelize_scoring, **kwargs)
        self.judge_client = judge_client if judge_client is not None else _client_from_environment()
        self.judge_model = judge_model
        self.judge_sampling_args = dict(judge_sampling_args or {})
        self.judge_prompt = judge_prompt
        self.class_objects.update(
            judge=self.judge,
            judge_client=self.judge_client,
            judge_model=self.judge_model,
            judge_prompt=self.judge_prompt,
            judge_sampling_args=self.judge_sampling_args,
        )

    async def judge(
        self,
        prompt: Any,
        completion: Any,
        answer: Any,
        state: MutableMapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> str:
        """The judge model's raw reply about ``completion`` (cached in ``state["judge_response"]``).

        Raises:
            JudgeError: the judge API failed (after the client's own retries).
        """
        # No parsed answer is filled in as "None", as both classic releases did: judge
        # prompts and the verdicts reward functions read from them depend on that text.
        response = self.parser.parse_answer(completion)
        filled = self.judge_prompt.format(question=_question(prompt), answer=answer, response=response)
        cache = _judge_cache(state)
        if filled not in cache:
            cache[filled] = await self._ask(filled)
        return cache[filled]

    async def _ask(self, content: str) -> str:
        client = self._client()
        request = {
            "model": self.judge_model,
            "messages": [{"role": "user", "content": content}],
            **judge_request_args(self.judge_sampling_args),
        }
        try:
            if isinstance(client, OpenAI):  # a sync client would block the event loop
                # a partial, since to_thread cannot pick create's overload from a dict of keyword arguments
                reply = await asyncio.to_thread(functools.partial(client.chat.completions.create, **request))
            else:
                reply = await maybe_await(client.chat.completions.create, **request)
        except APIError as exc:
            raise JudgeError(
                f"the judge model {self.judge_model!r} at {getattr(client, 'base_url', '?')} failed: {exc}. "
                "Check that the server is up, the API key is valid and the model name exists; pass "
                "judge_client=AsyncOpenAI(base_url=..., api_key=...) and judge_model=... to use another judge."
            ) from exc
        choices = getattr(reply, "choices", None)
        if not choices:
            raise JudgeError(f"the judge model {self.judge_model!r} returned no choices")
        # str(), as the originals did: a reply without text (a refusal, a tool call) reads "None".
        return str(choices[0].message.content)

    def _client(self) -> AsyncOpenAI | OpenAI:
        if self.judge_client is None:
            self.judge_client = _client_from_environment()
            if self.judge_client is None:
                raise JudgeError(
                    "JudgeRubric has no judge client: set OPENAI_API_KEY, or pass "
                    "judge_client=AsyncOpenAI(base_url=..., api_key=...)"
                )
            self.class_objects["judge_client"] = self.judge_client
        return self.judge_client


def judge_request_args(sampling_args: Mapping[str, Any]) -> dict[str, Any]:
    """The judge's sampling arguments as sent to ``chat.completions.create``.

    ``max_tokens`` is sent as ``max_completion_tokens`` (the chat API's current name,
    which reasoning models require), replacing a ``max_completion_tokens`` given
    beside it, as both classic releases did; arguments set to ``None`` are left out.

    >>> judge_request_args({"max_tokens": 64, "temperature": None})
    {'max_completion_tokens': 64}
    """
    args = {key: value for key, value in sampling_args.items() if value is not None}
    if "max_tokens" in args:
        args["max_completion_tokens"] = args.pop("max_tokens")
    return args


def _judge_cache(state: MutableMapping[str, Any] | None) -> MutableMapping[str, str]:
    if not isinstance(state, MutableMapping):
        return {}
    cache = state.get("judge_response")
    if not isinstance(cache, MutableMapping):
        cache = state["judge_response"] = {}
    return cache


def _client_from_environment() -> AsyncOpenAI | None:
    # Without OPENAI_API_KEY the client cannot be built yet; the rubric must
    # still construct (most envs pass their own client later or never judge).
    try:
        return AsyncOpenAI()
    except OpenAIError:
        return None


def _question(prompt: Any) -> str:
    """The text of the prompt's last message (the whole prompt in completion mode)."""
    if isinstance(prompt, str):
        return prompt
    messages = list(prompt or [])
    return message_text(messages[-1]) if messages else ""


__all__ = ["DEFAULT_JUDGE_PROMPT", "JudgeError", "JudgeRubric", "judge_request_args"]
