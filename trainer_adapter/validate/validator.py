"""The trainer-side validator: every check on a submitted batch; a batch with any finding is dropped.

::

    validator = Validator(model, eos_id, prompts, ValidatorConfig(...))
    verdict = validator.validate(json.loads(body))   # schema, assignment, values, then one prefill per rollout
    if verdict.accepted: ...train on it...           # else: dropped, counted against verdict.worker

Tolerances are not guesses: bench/toploc.py measures them on honest workers (docs/validation.md).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

from pydantic import Field, ValidationError
from transformers import PreTrainedModel

from trainer_adapter.validate.assignment import assigned_problems
from trainer_adapter.validate.batch import WORKER_MAX_LEN, WORKER_PATTERN, SubmittedBatch
from trainer_adapter.validate.checks import Finding, ModelCheckSettings, Verdict, check_assignment, check_values
from trainer_adapter.validate.generation import check_generation
from trainer_adapter.validate.metrics import RejectionLedger, ValidatorMetrics, validator_metrics

UNPARSED_WORKER = "<unparsed>"


class ValidatorConfig(ModelCheckSettings):
    """What the validator accepts; the tolerances come from honest runs (bench/toploc.py)."""

    problems_per_step: int = Field(ge=1, description="Problems assigned to each worker per step.")
    rollouts_per_problem: int = Field(ge=1, description="Rollouts of each assigned problem (the group size).")
    reward_range: tuple[float, float] = Field((0.0, 1.0), description="Rewards outside [low, high] are refused.")
    advantage_tolerance: float = Field(1e-4, gt=0, description="Largest |advantage - (reward - group mean)|.")


class Validator:
    """Validates submitted batches against the trainer's model and the replayed data assignment."""

    def __init__(
        self,
        model: PreTrainedModel,
        eos_id: int,
        prompts: Sequence[list[int]],
        config: ValidatorConfig,
        metrics: ValidatorMetrics | None = None,
    ) -> None:
        self.model = model.eval()
        self.eos_id = eos_id
        self.prompts = prompts
        self.config = config
        self.metrics = metrics or validator_metrics()
        self.ledger = RejectionLedger()

    def validate(self, payload: dict[str, Any] | SubmittedBatch) -> Verdict:
        """Run every check on ``payload`` (a worker's JSON object), count the outcome and return it."""
        start = time.perf_counter()
        try:
            batch = SubmittedBatch.model_validate(payload)
        except ValidationError as exc:
            worker = _worker_name(payload)
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            findings = [Finding(check="schema", detail=f"{exc.error_count()} errors; first at {where}: {first['msg']}")]
            return self._record(worker, None, findings, start)
        findings = self._batch_checks(batch)
        if not findings:  # the prefill is the expensive part: only for batches that pass the cheap checks
            findings = self._model_checks(batch)
        return self._record(batch.worker, batch.step, findings, start)

    def _batch_checks(self, batch: SubmittedBatch) -> list[Finding]:
        c = self.config
        expected = assigned_problems(batch.step, batch.worker, len(self.prompts), c.problems_per_step)
        return check_assignment(batch, expected, c.rollouts_per_problem, self._prompt) + check_values(
            batch, c.reward_range, c.advantage_tolerance
        )

    def _model_checks(self, batch: SubmittedBatch) -> list[Finding]:
        return check_generation(self.model, batch.rollouts, self.config, temperature=batch.temperature,
                                max_tokens=batch.max_tokens, eos_id=self.eos_id)

    def _prompt(self, problem: int) -> list[int]:
        return self.prompts[problem] if 0 <= problem < len(self.prompts) else []

    def _record(self, worker: str, step: int | None, findings: list[Finding], start: float) -> Verdict:
        verdict = Verdict(worker=worker, step=step, findings=findings, seconds=time.perf_counter() - start)
        self.ledger.record(worker, verdict.checks)
        self.metrics.record(verdict.checks, verdict.seconds)
        return verdict


def _worker_name(payload: object) -> str:
    """The worker a batch that failed the schema claims to come from, if that much is well formed."""
    worker = payload.get("worker") if isinstance(payload, dict) else None
    if isinstance(worker, str) and len(worker) <= WORKER_MAX_LEN and re.fullmatch(WORKER_PATTERN, worker):
        return worker
    return UNPARSED_WORKER


__all__ = ["Validator", "ValidatorConfig", "Verdict"]
