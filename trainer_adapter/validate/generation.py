"""The checks that need the model: one prefill per turn with the trainer's weights, compared with what a worker
(an inference server) claims it generated.

Both validators use them: :class:`~trainer_adapter.validate.validator.Validator` on an untrusted worker's
submitted batch, and the orchestrator's :mod:`~trainer_adapter.orchestrator.validation` on each rollout group
an inference server generated.

::

    findings = check_generation(model, turns, ModelCheckSettings(...), temperature=1.0, max_tokens=32, eos_id=2)

``tokens_checked=False`` runs the commitment check alone: for turns whose tokens may have been sampled by an
older version than the one the commitment names (an in-flight weight update landed between generation and
commitment), the logprobs, termination and sampling checks would compare with the wrong distribution.
"""

from __future__ import annotations

from collections.abc import Sequence

from transformers import PreTrainedModel

from trainer_adapter.validate.batch import GeneratedTurn
from trainer_adapter.validate.checks import (
    Finding,
    ModelCheckSettings,
    check_logprobs,
    check_sampling,
    check_termination,
    sampling_z,
)
from trainer_adapter.validate.commitment import compare
from trainer_adapter.validate.prefill import recompute_many


def check_generation(
    model: PreTrainedModel,
    turns: Sequence[GeneratedTurn],
    settings: ModelCheckSettings,
    *,
    temperature: float,
    max_tokens: int,
    eos_id: int,
    tokens_checked: bool = True,
) -> list[Finding]:
    """Every model check on ``turns`` (findings name the turn by its index); empty: all passed."""
    findings: list[Finding] = []
    sampled: list[float] = []
    collisions: list[float] = []
    cubes: list[float] = []
    recomputed = recompute_many(model, [(t.prompt_ids, t.completion_ids) for t in turns], temperature, eos_id)
    for i, (turn, seen) in enumerate(zip(turns, recomputed, strict=True)):
        match = compare(turn.commitment, seen.hidden, settings.commitment_tolerance)
        if not match.ok:
            findings.append(Finding(check="commitment", rollout=i, detail=match.detail))
        if not tokens_checked:
            continue
        findings += check_logprobs(turn.logprobs, seen.logprobs, i, settings.logprob_tolerance)
        findings += check_termination(turn, i, max_tokens, eos_id, seen.eos_prob, settings.eos_floor)
        sampled += seen.sampled_probs
        collisions += seen.collisions
        cubes += seen.cubes
    if sampled:
        findings += check_sampling(sampling_z(sampled, collisions, cubes), settings.sampling_threshold)
    return findings


__all__ = ["check_generation"]
