"""The checks that need no model: pure functions over a submitted batch and what a prefill recomputed.

Each returns the :class:`Finding` s it makes (empty: passed). The validator runs them all and rejects a
batch with any finding; a finding names its check, the rollout (or None for the batch) and what was wrong.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from trainer_adapter.validate.batch import GeneratedTurn, SubmittedBatch, SubmittedRollout

CheckName = Literal["schema", "assignment", "values", "commitment", "logprobs", "termination", "sampling"]
CHECKS: tuple[CheckName, ...] = ("schema", "assignment", "values", "commitment", "logprobs", "termination", "sampling")


class ModelCheckSettings(BaseModel):
    """The tolerances of the model checks; measured on honest runs (bench/toploc.py), never guessed."""

    model_config = ConfigDict(extra="forbid")

    commitment_tolerance: float = Field(gt=0, description="Largest |committed - recomputed| hidden value.")
    logprob_tolerance: float = Field(gt=0, description="Largest |claimed - recomputed| logprob, in nats.")
    eos_floor: float = Field(ge=0, lt=1, description="Least probability of an EOS that ended a rollout.")
    sampling_threshold: float = Field(gt=0, description="Largest |z| of the batch's sampled-token probabilities.")


class Finding(BaseModel):
    """One reason to reject a batch."""

    check: CheckName
    rollout: int | None = None
    detail: str


class Verdict(BaseModel):
    """The outcome for one batch."""

    worker: str
    step: int | None
    findings: list[Finding]
    seconds: float

    @property
    def accepted(self) -> bool:
        return not self.findings

    @property
    def checks(self) -> set[CheckName]:
        return {f.check for f in self.findings}


def check_assignment(
    batch: SubmittedBatch, expected: Sequence[int], rollouts_per_problem: int, prompt_of: Callable[[int], list[int]]
) -> list[Finding]:
    """The batch holds exactly ``rollouts_per_problem`` rollouts of each expected problem, with its prompt.

    ``expected`` is the replayed assignment (:func:`~trainer_adapter.validate.assignment.assigned_problems`);
    a worker that swapped in problems it preferred, or dropped samples it disliked, fails here.
    """
    findings: list[Finding] = []
    counts: dict[int, int] = defaultdict(int)
    for i, rollout in enumerate(batch.rollouts):
        counts[rollout.problem] += 1
        if rollout.problem in expected and rollout.prompt_ids != prompt_of(rollout.problem):
            findings.append(Finding(check="assignment", rollout=i, detail=f"prompt is not problem {rollout.problem}'s"))
    extra = sorted(set(counts) - set(expected))
    if extra:
        findings.append(Finding(check="assignment", detail=f"problems {extra[:5]} were not assigned"))
    short = [p for p in expected if counts.get(p, 0) != rollouts_per_problem]
    if short:
        got = [counts.get(p, 0) for p in short[:5]]
        findings.append(
            Finding(
                check="assignment", detail=f"problems {short[:5]} have {got} rollouts, not {rollouts_per_problem} each"
            )
        )
    return findings


def check_values(
    batch: SubmittedBatch, reward_range: tuple[float, float], advantage_tolerance: float = 1e-4
) -> list[Finding]:
    """Rewards lie in ``reward_range``; each advantage is its reward minus its problem group's mean reward."""
    low, high = reward_range
    findings = [
        Finding(check="values", rollout=i, detail=f"reward {r.reward} outside [{low}, {high}]")
        for i, r in enumerate(batch.rollouts)
        if not low <= r.reward <= high
    ]
    groups: dict[int, list[SubmittedRollout]] = defaultdict(list)
    for rollout in batch.rollouts:
        groups[rollout.problem].append(rollout)
    for i, rollout in enumerate(batch.rollouts):
        group = groups[rollout.problem]
        expected = rollout.reward - sum(r.reward for r in group) / len(group)
        if abs(rollout.advantage - expected) > advantage_tolerance:
            findings.append(
                Finding(
                    check="values",
                    rollout=i,
                    detail=f"advantage {rollout.advantage:.4g} is not reward - group mean ({expected:.4g})",
                )
            )
    return findings


def check_termination(
    rollout: GeneratedTurn, index: int, max_tokens: int, eos_id: int, eos_prob: float, eos_floor: float
) -> list[Finding]:
    """A rollout ends at ``max_tokens`` without EOS, or at its only EOS, sampled with probability >= the floor.

    ``eos_prob`` is the validator's own probability of EOS at the last state, not the worker's word. A turn
    that ended at one of the request's stop strings (``stop_string``, set by the orchestrator only) has no EOS
    to check: only that no EOS came before its end.
    """
    ids = rollout.completion_ids
    if eos_id in ids[:-1]:
        return [Finding(check="termination", rollout=index, detail=f"EOS at token {ids.index(eos_id)} is not last")]
    if rollout.finish_reason == "length":
        if len(ids) != max_tokens or ids[-1] == eos_id:
            return [
                Finding(
                    check="termination",
                    rollout=index,
                    detail=f"'length' after {len(ids)} tokens (max_tokens {max_tokens}), last {ids[-1]}",
                )
            ]
        return []
    if ids[-1] != eos_id:
        if rollout.stop_string:
            return []
        return [Finding(check="termination", rollout=index, detail="'stop' without EOS as the last token")]
    if eos_prob < eos_floor:
        return [
            Finding(
                check="termination", rollout=index, detail=f"EOS had probability {eos_prob:.2e} < floor {eos_floor:.0e}"
            )
        ]
    return []


def check_logprobs(
    claimed: Sequence[float], recomputed: Sequence[float], index: int, tolerance: float
) -> list[Finding]:
    """The worker's logprobs (which the loss trusts for importance ratios) match the prefill's."""
    gap = max(abs(a - b) for a, b in zip(claimed, recomputed, strict=True))
    if gap > tolerance:
        return [Finding(check="logprobs", rollout=index, detail=f"logprobs off by {gap:.3g} > {tolerance:.3g}")]
    return []


def sampling_z(sampled_probs: Sequence[float], collisions: Sequence[float], cubes: Sequence[float]) -> float:
    """How many standard deviations the sampled tokens' probabilities sit from what honest sampling gives.

    A token drawn from distribution q has probability q(x) with mean sum(q^2) and variance sum(q^3) -
    sum(q^2)^2; over independent positions the sum is near normal. Tokens from another model (a smaller one,
    prefilled by the right one only afterwards) take low-probability tokens far too often: z is very negative.
    Greedy decoding passed off as sampling makes it very positive.
    """
    observed = sum(sampled_probs)
    mean = sum(collisions)
    variance = sum(c3 - c2 * c2 for c2, c3 in zip(collisions, cubes, strict=True))
    return (observed - mean) / math.sqrt(max(variance, 1e-12))


def check_sampling(z: float, threshold: float, index: int | None = None) -> list[Finding]:
    """Reject when |z| (from :func:`sampling_z`) exceeds ``threshold``."""
    if abs(z) > threshold:
        return [
            Finding(
                check="sampling",
                rollout=index,
                detail=f"sampled-token probabilities at z = {z:.1f}, beyond +/-{threshold}",
            )
        ]
    return []


__all__ = [
    "CHECKS", "CheckName", "Finding", "ModelCheckSettings", "Verdict", "check_assignment", "check_logprobs",
    "check_sampling", "check_termination", "check_values", "sampling_z",
]  # fmt: skip
