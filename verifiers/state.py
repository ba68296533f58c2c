"""The rollout state: one dict that both API eras read and write.

Public environments index the state directly (``state["turn"] += 1``,
``state["trajectory"][-1]``, ``state.get("info")``), so it has to stay a dict.
It carries the keys of both eras, kept consistent by the rollout loop:

========================  =====================================================
tuple era (0.1.x)         ``id``, ``prompt``, ``completion``, ``answer``,
                          ``task``, ``info``, ``responses``, ``turn``, ``timing``
state era (0.1.8-0.3.0)   ``input``, ``example_id``, ``trajectory``,
                          ``trajectory_id``, ``is_completed``, ``is_truncated``,
                          ``stop_condition``, ``reward``, ``metrics``, ``error``,
                          ``final_env_response``, ``tool_defs``, ``model``,
                          ``sampling_args``, ``client``
========================  =====================================================

A :class:`TrajectoryStep` is recorded per model turn with the prompt the model
saw, its completion, and (when the server returned them) the exact token ids
and logprobs for training.
"""

from __future__ import annotations

import uuid
from typing import Any, TypedDict


class Timing(TypedDict):
    generation_ms: float
    scoring_ms: float
    total_ms: float


class TrajectoryStepTokens(TypedDict, total=False):
    """Token-level view of one model turn, as the server returned it."""

    prompt_ids: list[int]
    prompt_mask: list[int]
    completion_ids: list[int]
    completion_mask: list[int]
    completion_logprobs: list[float]
    # set by verifiers.utils.response_utils.parse_response_tokens when it cuts to a max_seq_len (0.1.x)
    overlong_prompt: bool
    is_truncated: bool


class TrajectoryStep(TypedDict, total=False):
    """One model turn: what the model saw, what it produced, and its tokens."""

    prompt: Any
    completion: Any
    response: Any
    tokens: TrajectoryStepTokens | None
    reward: float | None
    advantage: float | None
    is_truncated: bool
    trajectory_id: str
    extras: dict[str, Any]


class State(dict):
    """The mutable record of one rollout (a dict; see the module docstring)."""

    @classmethod
    def new(
        cls,
        *,
        prompt: Any,
        answer: str = "",
        task: str = "default",
        info: dict[str, Any] | None = None,
        example_id: int = 0,
        model: str = "",
        client: Any = None,
        sampling_args: dict[str, Any] | None = None,
        tool_defs: list[dict[str, Any]] | None = None,
        oai_tools: list[dict[str, Any]] | None = None,
        input: dict[str, Any] | None = None,
    ) -> State:
        """A fresh state holding the keys of both eras."""
        info = dict(info or {})
        state = cls(
            id=example_id,
            example_id=example_id,
            prompt=prompt,
            completion=[] if isinstance(prompt, list) else "",
            answer=answer,
            task=task,
            info=info,
            input=input if input is not None else {
                "prompt": prompt, "answer": answer, "task": task, "info": info, "example_id": example_id,
            },
            responses=[],
            turn=0,
            trajectory=[],
            trajectory_id=uuid.uuid4().hex,
            model=model,
            client=client,
            sampling_args=dict(sampling_args or {}),
            tool_defs=tool_defs or [],
            oai_tools=oai_tools or [],
            is_completed=False,
            is_truncated=False,
            stop_condition=None,
            final_env_response=None,
            reward=None,
            metrics=None,
            error=None,
            timing=Timing(generation_ms=0.0, scoring_ms=0.0, total_ms=0.0),
        )
        return state


__all__ = ["State", "Timing", "TrajectoryStep", "TrajectoryStepTokens"]
