"""Token ids and logprobs of one model turn, read from the server's response.

vLLM-compatible servers return them as extra fields the OpenAI types don't
declare: ``prompt_token_ids`` (top level for chat, on the choice for
completions), ``choices[0].token_ids`` (with ``return_token_ids``) and logprob
tokens spelled ``"token_id:<id>"`` (with ``return_tokens_as_token_ids``).
"""

from __future__ import annotations

from typing import Any

from verifiers.errors import ModelError
from verifiers.state import TrajectoryStepTokens

_ID_PREFIX = "token_id:"


def _field(obj: Any, name: str) -> Any:
    """``obj.name`` for SDK objects (declared or extra fields) and dicts alike."""
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    value = getattr(obj, name, None)
    if value is None:
        extra = getattr(obj, "model_extra", None) or {}
        value = extra.get(name)
    return value


def _logprob_tokens(choice: Any) -> tuple[list[str], list[float]] | None:
    """Token strings and logprobs of a chat (``logprobs.content``) or completion (``logprobs.tokens``) choice."""
    logprobs = _field(choice, "logprobs")
    if logprobs is None:
        return None
    content = _field(logprobs, "content")
    if content is not None:
        return [_field(e, "token") for e in content], [float(_field(e, "logprob")) for e in content]
    tokens = _field(logprobs, "tokens")
    if tokens is None:
        return None
    values = _field(logprobs, "token_logprobs") or []
    return list(tokens), [float(v) if v is not None else 0.0 for v in values]


def _ids_from_token_strings(tokens: list[str]) -> list[int] | None:
    if not all(isinstance(t, str) and t.startswith(_ID_PREFIX) for t in tokens):
        return None
    return [int(t[len(_ID_PREFIX):]) for t in tokens]


def step_tokens(response: Any) -> TrajectoryStepTokens | None:
    """The :class:`TrajectoryStepTokens` of a ``ChatCompletion``/``Completion`` (or its JSON dict).

    Completion ids come from ``choices[0].token_ids``, else from ``"token_id:<n>"``
    logprob tokens; logprobs from ``choices[0].logprobs`` (0.0 each when the server
    sent ids without logprobs); prompt ids from ``prompt_token_ids`` (``[]`` when
    absent: :func:`verifiers.tokens.samples.trajectory_to_samples` can re-tokenize).
    Returns ``None`` when the response carries no token ids. Raises
    :class:`~verifiers.errors.ModelError` when ids and logprobs disagree in length.

    >>> step_tokens({"choices": [{"token_ids": [5, 6]}], "prompt_token_ids": [1]})["completion_mask"]
    [1, 1]
    """
    choices = _field(response, "choices") or []
    if not choices:
        return None
    choice = choices[0]
    from_logprobs = _logprob_tokens(choice)
    completion_ids = _field(choice, "token_ids")
    if completion_ids is None and from_logprobs is not None:
        completion_ids = _ids_from_token_strings(from_logprobs[0])
    if completion_ids is None:
        return None
    completion_ids = [int(i) for i in completion_ids]
    logprobs = from_logprobs[1] if from_logprobs is not None else [0.0] * len(completion_ids)
    if len(logprobs) != len(completion_ids):
        raise ModelError(
            f"server returned {len(completion_ids)} completion token ids but {len(logprobs)} logprobs"
        )
    prompt_ids = _field(response, "prompt_token_ids")
    if prompt_ids is None:
        prompt_ids = _field(choice, "prompt_token_ids")
    prompt_ids = [int(i) for i in prompt_ids or ()]
    return TrajectoryStepTokens(
        prompt_ids=prompt_ids,
        prompt_mask=[0] * len(prompt_ids),
        completion_ids=completion_ids,
        completion_mask=[1] * len(completion_ids),
        completion_logprobs=logprobs,
    )


__all__ = ["step_tokens"]
