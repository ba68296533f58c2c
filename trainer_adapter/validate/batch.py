"""What a worker submits for one step: a batch of rollouts with their commitments (the schema check).

Parsing a worker's JSON with :meth:`SubmittedBatch.model_validate` *is* the schema check: unknown fields,
wrong types, non-finite numbers, logprobs above 0 and lists whose lengths disagree are refused there, before
any other check runs.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainer_adapter.validate.commitment import Commitment

WORKER_PATTERN = r"[A-Za-z0-9_.:-]+"
WORKER_MAX_LEN = 128


class GeneratedTurn(BaseModel):
    """One model turn as its server produced it: the tokens it saw and sampled, their logprobs, how it ended,
    and the server's commitment to the final hidden states (what the model checks look at)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    prompt_ids: list[int] = Field(min_length=1)
    completion_ids: list[int] = Field(min_length=1)
    logprobs: list[float] = Field(description="The worker's logprob of each completion token.")
    finish_reason: Literal["stop", "length"]
    stop_string: bool = Field(
        False, description="A 'stop' turn ended at a stop string of the request, not at EOS (vLLM's stop_reason "
        "names it). Only the orchestrator, which made the request, sets it; a submitted batch may not.")
    commitment: Commitment

    @model_validator(mode="after")
    def _consistent(self) -> GeneratedTurn:
        if len(self.logprobs) != len(self.completion_ids):
            raise ValueError(f"{len(self.logprobs)} logprobs for {len(self.completion_ids)} completion tokens")
        if any(lp > 0 for lp in self.logprobs):
            raise ValueError("a logprob above 0")
        if min(self.prompt_ids + self.completion_ids) < 0:
            raise ValueError("a negative token id")
        return self


class SubmittedRollout(GeneratedTurn):
    """One rollout of a worker's batch: which problem, its one turn, its reward and advantage."""

    problem: int = Field(ge=0, description="Index of the problem in the step's dataset.")
    reward: float
    advantage: float

    @model_validator(mode="after")
    def _no_stop_strings(self) -> SubmittedRollout:
        if self.stop_string:
            raise ValueError("stop_string: the validator's requests name no stop strings")
        return self


class SubmittedBatch(BaseModel):
    """One worker's batch for one step, with the sampling settings it claims to have used."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    worker: str = Field(min_length=1, max_length=WORKER_MAX_LEN, pattern=f"^{WORKER_PATTERN}$")
    step: int = Field(ge=0)
    temperature: float = Field(gt=0)
    max_tokens: int = Field(ge=1)
    rollouts: list[SubmittedRollout] = Field(min_length=1)

    @model_validator(mode="after")
    def _within_limits(self) -> SubmittedBatch:
        for i, rollout in enumerate(self.rollouts):
            if len(rollout.completion_ids) > self.max_tokens:
                raise ValueError(f"rollout {i}: {len(rollout.completion_ids)} tokens > max_tokens {self.max_tokens}")
        return self


__all__ = ["WORKER_MAX_LEN", "WORKER_PATTERN", "GeneratedTurn", "SubmittedBatch", "SubmittedRollout"]
