"""``POST /commitment`` on the inference server: commitments to rollouts' final hidden states, for the validator.

::

    POST /commitment  {"rollouts": [{"prompt_ids": [...], "completion_ids": [...]}], "interval": 8, "k": 8}
                      -> {"commitments": [{"interval", "k", "states", "indices", "values"}, ...],
                          "weights_version": 3, "weight_dir": "/run/weights/step_3"}

The worker that generated a rollout asks its own server for the rollout's commitment right after generation
and submits both (docs/validation.md). The computation runs on the engine's worker
(:class:`~trainer_adapter.inference.commitment_worker.CommitmentWorker`) under the weight lock, so it never
straddles a weight update, and the answer names the weights it used: the server's count of loads and the
folder it loaded last (``null``: the weights it was started with), whose ``step_N`` name tells the orchestrator's
validator the trainer's version.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

MAX_ROLLOUTS = 256


class RolloutTokens(BaseModel):
    """One rollout's token ids."""

    model_config = ConfigDict(extra="forbid")

    prompt_ids: list[int] = Field(min_length=1)
    completion_ids: list[int] = Field(min_length=1)


class CommitmentRequest(BaseModel):
    """Body of ``POST /commitment``."""

    model_config = ConfigDict(extra="forbid")

    rollouts: list[RolloutTokens] = Field(min_length=1, max_length=MAX_ROLLOUTS)
    interval: int = Field(8, ge=1, description="Commit every interval-th predicting state (and the last).")
    k: int = Field(8, ge=1, description="Coordinates kept per committed state.")


def add_commitment_route(
    admin: FastAPI, engine_key: str, state: Any, check_token: Callable[[Request], JSONResponse | None]
) -> None:
    """Add ``POST /commitment`` to the weight routes' app (same token, same engine, same weight lock)."""

    @admin.post("/commitment")
    async def commitment(request: Request, body: CommitmentRequest) -> JSONResponse:
        if denied := check_token(request):
            return denied
        engine = request.scope[engine_key]
        if problem := _out_of_range(body, engine.vllm_config.model_config):
            return JSONResponse({"error": problem}, status_code=400)
        rollouts = [r.model_dump() for r in body.rollouts]
        async with state.lock:
            try:
                results = await engine.collective_rpc("commit_tokens", args=(rollouts, body.interval, body.k))
            except Exception as exc:  # vLLM re-raises a worker's error as a bare Exception carrying its message
                return JSONResponse({"error": f"commit_tokens failed: {exc}"}, status_code=500)
            version, weight_dir = state.version, state.weight_dir
        return JSONResponse({"commitments": results[0], "weights_version": version, "weight_dir": weight_dir})


def _out_of_range(body: CommitmentRequest, model_config: Any) -> str | None:
    """Why the engine could not take ``body`` (token ids past the vocabulary, too long, k past the width)."""
    vocab, width, longest = model_config.get_vocab_size(), model_config.get_hidden_size(), model_config.max_model_len
    if body.k > width:
        return f"k={body.k} is wider than the hidden size {width}"
    for i, r in enumerate(body.rollouts):
        ids = r.prompt_ids + r.completion_ids
        if min(ids) < 0 or max(ids) >= vocab:
            return f"rollout {i}: token ids must lie in [0, {vocab})"
        if len(ids) > longest:
            return f"rollout {i}: {len(ids)} tokens > max_model_len {longest}"
    return None


__all__ = ["CommitmentRequest", "RolloutTokens", "add_commitment_route"]
