"""A worker's commitment to the final hidden states of a rollout, and the comparison with a recomputation.

The scheme (a simplification of TOPLOC, kept honest rather than compact): the hidden states that matter are
the last layer's output (after the final norm) at the C positions that *predicted* the completion's tokens,
i.e. state ``j`` sits at absolute position ``prompt_len - 1 + j`` and its logits chose completion token ``j``.
Every ``interval``-th of them (and the last) is committed as its ``k`` largest-magnitude coordinates: their
indices and values. Nothing is hashed; a rollout of C tokens costs ``ceil(C / interval) * k`` pairs.

A recomputation by prefill accepts a committed state when every committed index is among the recomputed
top-k up to the tolerance (its magnitude is at least the k-th largest minus ``tolerance``, so honest ties at
the boundary pass) and every committed value is within ``tolerance`` of the recomputed one. The tolerance is
measured on honest runs (bench/toploc.py), not derived.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    import torch


class Commitment(BaseModel):
    """Top-k coordinates of the committed hidden states of one rollout."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    interval: int = Field(ge=1, description="Every interval-th predicting state is committed (and the last).")
    k: int = Field(ge=1, description="Coordinates kept per committed state.")
    states: list[int] = Field(description="Which predicting states (0 = the one that chose completion token 0).")
    indices: list[list[int]] = Field(description="Per committed state: the k coordinates, largest magnitude first.")
    values: list[list[float]] = Field(description="Per committed state: the values at those coordinates.")

    @model_validator(mode="after")
    def _shapes(self) -> Commitment:
        if not (len(self.states) == len(self.indices) == len(self.values)):
            raise ValueError("states, indices and values must have one entry per committed state")
        for idx, vals in zip(self.indices, self.values, strict=True):
            if len(idx) != self.k or len(vals) != self.k:
                raise ValueError(f"each committed state needs exactly k={self.k} indices and values")
            if len(set(idx)) != self.k or min(idx) < 0:
                raise ValueError("committed indices must be k distinct non-negative coordinates")
            if not all(math.isfinite(v) for v in vals):
                raise ValueError("committed values must be finite")
        return self


def committed_states(completion_len: int, interval: int) -> list[int]:
    """Which of a completion's ``completion_len`` predicting states are committed: 0, interval, ..., and the last."""
    if completion_len <= 0:
        return []
    states = list(range(0, completion_len, interval))
    if states[-1] != completion_len - 1:
        states.append(completion_len - 1)
    return states


def commit(hidden: torch.Tensor, interval: int, k: int) -> Commitment:
    """The commitment to ``hidden``: the predicting states, one row each (``[completion_len, hidden_size]``)."""
    import torch

    if hidden.dim() != 2 or k > hidden.shape[1]:
        raise ValueError(f"hidden must be [states, hidden_size >= k]; got {tuple(hidden.shape)} with k={k}")
    states = committed_states(hidden.shape[0], interval)
    rows = hidden[states].float() if states else hidden.new_zeros((0, hidden.shape[1]), dtype=torch.float32)
    top = rows.abs().topk(k, dim=-1).indices
    values = rows.gather(-1, top)
    return Commitment(interval=interval, k=k, states=states, indices=top.tolist(), values=values.tolist())


class CommitmentMatch(BaseModel):
    """How far a commitment is from a recomputation; ``ok`` under the tolerance it was compared with."""

    ok: bool
    value_error: float = Field(description="Largest |committed - recomputed| value over committed coordinates.")
    rank_error: float = Field(description="Largest shortfall of a committed index below the recomputed k-th.")
    detail: str = ""


def compare(claimed: Commitment, hidden: torch.Tensor, tolerance: float) -> CommitmentMatch:
    """Compare ``claimed`` with the recomputed predicting states ``hidden`` (``[completion_len, hidden_size]``)."""
    import torch

    expected = committed_states(hidden.shape[0], claimed.interval)
    if claimed.states != expected:
        return CommitmentMatch(
            ok=False,
            value_error=math.inf,
            rank_error=math.inf,
            detail=f"committed states {claimed.states[:6]}... are not {expected[:6]}...",
        )
    if not expected:
        return CommitmentMatch(ok=True, value_error=0.0, rank_error=0.0)
    if max(max(i) for i in claimed.indices) >= hidden.shape[1]:
        return CommitmentMatch(
            ok=False,
            value_error=math.inf,
            rank_error=math.inf,
            detail=f"a committed index is past the hidden size {hidden.shape[1]}",
        )
    rows = hidden[expected].float()
    index = torch.tensor(claimed.indices, dtype=torch.long)
    recomputed = rows.gather(-1, index)
    value_error = float((recomputed - torch.tensor(claimed.values)).abs().max())
    kth = rows.abs().topk(claimed.k, dim=-1).values[:, -1:]
    rank_error = float((kth - recomputed.abs()).clamp(min=0).max())
    ok = value_error <= tolerance and rank_error <= tolerance
    detail = "" if ok else f"value error {value_error:.3g}, rank error {rank_error:.3g} > tolerance {tolerance:.3g}"
    return CommitmentMatch(ok=ok, value_error=value_error, rank_error=rank_error, detail=detail)


__all__ = ["Commitment", "CommitmentMatch", "commit", "committed_states", "compare"]
