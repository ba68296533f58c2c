"""Training samples from rollouts: token ids, masks and inference logprobs, laid end to end.

A multi-turn rollout trains as one sequence only if every turn's prompt starts
with the previous turn's prompt and completion (the template is
*prefix-monotone*). Then the tokens in between (tool results, user turns, the
next assistant header) are the environment's, and get mask 0 when
``mask_env_responses``. Templates that rewrite history (Qwen3 drops past
``<think>`` blocks) break that property; the rollout then becomes several
samples, each faithful to what the model saw. Every model-produced token
appears exactly once, with mask 1 and its server logprob.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from verifiers.errors import UsageError
from verifiers.messages import to_plain
from verifiers.state import TrajectoryStep, TrajectoryStepTokens
from verifiers.tokens.response_tokens import step_tokens
from verifiers.types import ProcessedOutputs


@dataclass
class TrainingSample:
    """One training sequence: ``prompt_ids + completion_ids`` with per-token masks and logprobs."""

    prompt_ids: list[int]
    prompt_mask: list[int]
    completion_ids: list[int] = field(default_factory=list)
    completion_mask: list[int] = field(default_factory=list)
    completion_logprobs: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.prompt_ids) + len(self.completion_ids)

    def _extend(self, ids: Sequence[int], mask: Sequence[int], logprobs: Sequence[float]) -> None:
        self.completion_ids.extend(ids)
        self.completion_mask.extend(mask)
        self.completion_logprobs.extend(logprobs)

    def _is_prefix_of(self, ids: Sequence[int]) -> bool:
        head = len(self.prompt_ids)
        return (
            len(ids) >= len(self)
            and list(ids[:head]) == self.prompt_ids
            and list(ids[head : len(self)]) == self.completion_ids
        )


def trajectory_to_samples(
    trajectory: Sequence[TrajectoryStep | Mapping[str, Any]],
    mask_env_responses: bool = True,
    tokenizer: Any = None,
    tools: list[dict[str, Any]] | None = None,
) -> list[TrainingSample]:
    """Merge a rollout's steps into as few samples as its tokens allow (see the module docstring).

    Each step's tokens come from ``step["tokens"]``, else from ``step["response"]``.
    A step without prompt ids is re-tokenized with
    ``tokenizer.apply_chat_template(step["prompt"], tools=tools, add_generation_prompt=True)``
    (``tokenizer.encode`` for a completion-mode prompt).
    Raises :class:`~verifiers.errors.UsageError` when a step has no token ids at all.
    """
    samples: list[TrainingSample] = []
    env_mask = 0 if mask_env_responses else 1
    for index, step in enumerate(trajectory):
        tokens = _step_tokens(step, index)
        prompt_ids = list(tokens.get("prompt_ids") or ())
        if not prompt_ids:
            prompt_ids = _tokenize_prompt(step, index, tokenizer, tools)
        current = samples[-1] if samples else None
        if current is not None and current._is_prefix_of(prompt_ids):
            between = prompt_ids[len(current) :]
            current._extend(between, [env_mask] * len(between), [0.0] * len(between))
        else:
            prompt_mask = list(tokens.get("prompt_mask") or ())
            if len(prompt_mask) != len(prompt_ids):
                prompt_mask = [0] * len(prompt_ids)
            current = TrainingSample(prompt_ids=prompt_ids, prompt_mask=prompt_mask)
            samples.append(current)
        ids = list(tokens.get("completion_ids") or ())
        mask = list(tokens.get("completion_mask") or [1] * len(ids))
        logprobs = list(tokens.get("completion_logprobs") or [0.0] * len(ids))
        if not len(ids) == len(mask) == len(logprobs):
            raise UsageError(f"trajectory step {index}: completion ids, mask and logprobs differ in length")
        current._extend(ids, mask, logprobs)
    return samples


def _step_tokens(step: Mapping[str, Any], index: int) -> TrajectoryStepTokens:
    tokens = step.get("tokens") or step_tokens(step.get("response"))
    if not tokens:
        raise UsageError(
            f"trajectory step {index} has no token ids; request them from the server with "
            "logprobs=True and extra_body={'return_token_ids': True} (vLLM: return_tokens_as_token_ids)"
        )
    return tokens


def _tokenize_prompt(
    step: Mapping[str, Any], index: int, tokenizer: Any, tools: list[dict[str, Any]] | None
) -> list[int]:
    if tokenizer is None:
        raise UsageError(f"trajectory step {index} has no prompt ids and no tokenizer was given to rebuild them")
    prompt = step.get("prompt")
    if isinstance(prompt, str):
        return list(tokenizer.encode(prompt))
    kwargs = {"tools": tools} if tools else {}
    ids = tokenizer.apply_chat_template(_template_messages(prompt or []), add_generation_prompt=True, **kwargs)
    if isinstance(ids, Mapping):  # some HF versions return a BatchEncoding
        ids = ids["input_ids"]
    return list(ids)


def _template_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Plain message dicts with tool-call arguments JSON-decoded, as HF chat templates expect."""
    plain: list[dict[str, Any]] = to_plain(list(messages))
    for message in plain:
        for call in message.get("tool_calls") or ():
            fn = call.get("function") or {}
            if isinstance(fn.get("arguments"), str):
                try:
                    fn["arguments"] = json.loads(fn["arguments"])
                except json.JSONDecodeError:
                    pass  # malformed arguments are rendered verbatim, as the model wrote them
    return plain


# -- the tuple-era entry point -------------------------------------------------------------


def process_env_results_vllm(
    prompts: Sequence[Any],
    completions: Sequence[Any],
    states: Sequence[Mapping[str, Any]],
    rewards: Sequence[float],
    processing_class: Any,
    max_seq_len: int = -1,
    mask_env_responses: bool = False,
    mask_truncated_completions: bool = False,
    zero_truncated_completions: bool = False,
) -> ProcessedOutputs:
    """Token rows for a trainer: one per rollout, or several (see ``rollout_index``) when the template rewrote history.

    Token ids and logprobs are the server's (``state["trajectory"]`` steps, else
    ``state["responses"]`` aligned with the assistant turns of the completion);
    ``processing_class`` (a tokenizer) only fills in prompt ids a server did not return.
    With ``max_seq_len > 0`` a longer row is cut: the prompt to ``max_seq_len``, then
    the completion to what is left. A row that was cut, or whose state says
    ``is_truncated``, gets a zero completion mask with ``mask_truncated_completions``
    and reward 0 with ``zero_truncated_completions``.
    """
    if not len(prompts) == len(completions) == len(states) == len(rewards):
        raise UsageError("prompts, completions, states and rewards must have the same length")
    out: dict[str, list[Any]] = {name: [] for name in ProcessedOutputs.model_fields}
    for i, (prompt, completion, state, reward) in enumerate(zip(prompts, completions, states, rewards)):
        steps = state.get("trajectory") or _steps_from_responses(prompt, completion, state)
        samples = trajectory_to_samples(steps, mask_env_responses, processing_class, _tools_of(state))
        for sample in samples:
            was_cut = _truncate(sample, max_seq_len)
            truncated = was_cut or bool(state.get("is_truncated"))
            if truncated and mask_truncated_completions:
                sample.completion_mask = [0] * len(sample.completion_ids)
            out["prompt_ids"].append(sample.prompt_ids)
            out["prompt_mask"].append(sample.prompt_mask)
            out["completion_ids"].append(sample.completion_ids)
            out["completion_mask"].append(sample.completion_mask)
            out["completion_logprobs"].append(sample.completion_logprobs)
            out["rewards"].append(0.0 if truncated and zero_truncated_completions else float(reward))
            out["rollout_index"].append(i)
    return ProcessedOutputs(**out)


def _truncate(sample: TrainingSample, max_seq_len: int) -> bool:
    if max_seq_len <= 0 or len(sample) <= max_seq_len:
        return False
    sample.prompt_ids = sample.prompt_ids[:max_seq_len]
    sample.prompt_mask = sample.prompt_mask[:max_seq_len]
    room = max_seq_len - len(sample.prompt_ids)
    sample.completion_ids = sample.completion_ids[:room]
    sample.completion_mask = sample.completion_mask[:room]
    sample.completion_logprobs = sample.completion_logprobs[:room]
    return True


def _steps_from_responses(prompt: Any, completion: Any, state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Tuple-era states: pair each raw response with the prompt its turn saw."""
    responses = list(state.get("responses") or ())
    if isinstance(prompt, str):
        starts = list(state.get("responses_start_idx") or ([0] if len(responses) == 1 else []))
        if len(starts) != len(responses):
            raise UsageError("a completion-mode state needs responses_start_idx for every response")
        return [{"prompt": prompt + completion[:s], "response": r} for s, r in zip(starts, responses)]
    turns = [j for j, m in enumerate(completion or ()) if (to_plain(m) or {}).get("role") == "assistant"]
    if len(turns) != len(responses):
        raise UsageError(f"{len(turns)} assistant turns in the completion but {len(responses)} responses in the state")
    return [{"prompt": list(prompt) + list(completion[:j]), "response": r} for j, r in zip(turns, responses)]


def _tools_of(state: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    tools = state.get("oai_tools") or (state.get("info") or {}).get("oai_tools") or state.get("tool_defs")
    if not tools:
        return None
    # State-era tool_defs are bare {name, description, parameters}; templates expect the OpenAI wrapper.
    return [t if "function" in t else {"type": "function", "function": t} for t in to_plain(list(tools))]


__all__ = ["TrainingSample", "process_env_results_vllm", "trajectory_to_samples"]
