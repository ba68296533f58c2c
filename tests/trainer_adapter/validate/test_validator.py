"""The validator against honest workers and a tampering worker per cheat, all on the trainer's tiny model.

Tolerances are the ones bench/toploc.py derives from honest runs (10x the largest honest error; the numbers
in docs/benchmarks.md), so a pass here is the bench's acceptance rule, not a looser one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from prometheus_client import CollectorRegistry
from transformers import PreTrainedModel

from trainer_adapter.model.tokenizer import build_tokenizer
from trainer_adapter.validate.assignment import assigned_problems
from trainer_adapter.validate.cheats import CHEATS, Cheat, CheatModels, cheater, perturbed, quantised
from trainer_adapter.validate.metrics import ValidatorMetrics
from trainer_adapter.validate.validator import UNPARSED_WORKER, Validator, ValidatorConfig
from trainer_adapter.validate.workers import HonestWorker, Sampling, arithmetic_prompts, peaked_tiny_model

DATASET = 32
EOS = build_tokenizer().eos_token_id
CONFIG = ValidatorConfig(
    problems_per_step=2, rollouts_per_problem=2, commitment_tolerance=1e-4, logprob_tolerance=5e-5,
    eos_floor=1e-4, sampling_threshold=5.0,
)  # fmt: skip
EXPECTED: dict[Cheat, str] = {
    "edited_tokens": "commitment",
    "other_weights": "commitment",
    "quantised": "commitment",
    "smaller_model": "sampling",
    "early_eos": "termination",
    "cherry_picked": "assignment",
    "reward_range": "values",
}


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def model() -> PreTrainedModel:
    return peaked_tiny_model(seed=0)


@pytest.fixture(scope="module")
def prompts() -> list[list[int]]:
    return arithmetic_prompts(DATASET)


def honest(name: str, model: PreTrainedModel, prompts: list[list[int]]) -> HonestWorker:
    return HonestWorker(name=name, model=model, prompts=prompts, eos_id=EOS, sampling=Sampling())


def submit(worker: HonestWorker, step: int) -> dict[str, Any]:
    problems = assigned_problems(step, worker.name, DATASET, CONFIG.problems_per_step)
    return worker.batch(step, problems, CONFIG.rollouts_per_problem, seed=step).model_dump()


def validator(model: PreTrainedModel, prompts: list[list[int]]) -> Validator:
    return Validator(model, EOS, prompts, CONFIG, metrics=ValidatorMetrics(CollectorRegistry()))


def test_honest_workers_are_accepted(model: PreTrainedModel, prompts: list[list[int]]) -> None:
    v = validator(model, prompts)
    verdicts = [v.validate(submit(honest(f"honest-{i}", model, prompts), step=i)) for i in range(4)]
    assert [f for verdict in verdicts for f in verdict.findings] == []
    assert v.ledger.rejected == {} and sum(v.ledger.submitted.values()) == 4


def test_the_assignment_depends_on_the_worker(model: PreTrainedModel, prompts: list[list[int]]) -> None:
    """A worker cannot submit another worker's (or another step's) batch as its own."""
    v = validator(model, prompts)
    batch = submit(honest("a", model, prompts), step=1)
    assert v.validate(batch).accepted
    assert "assignment" in v.validate({**batch, "worker": "b"}).checks
    assert "assignment" in v.validate({**batch, "step": 2}).checks


@pytest.mark.parametrize("cheat", CHEATS)
def test_each_cheat_is_rejected_by_its_check(cheat: Cheat, model: PreTrainedModel, prompts: list[list[int]]) -> None:
    models = CheatModels(
        other=perturbed(model, seed=1, scale=0.01), quantised=quantised(model, bits=8),
        small=peaked_tiny_model(seed=1, num_layers=1),
    )  # fmt: skip
    v = validator(model, prompts)
    worker = cheater(cheat, honest(f"cheater-{cheat}", model, prompts), models, DATASET)
    verdict = v.validate(submit(worker, step=5))
    assert not verdict.accepted and EXPECTED[cheat] in verdict.checks, verdict.findings
    assert v.ledger.rejected[f"cheater-{cheat}"] == 1
    assert v.ledger.by_check[f"cheater-{cheat}"][EXPECTED[cheat]] == 1


def test_rejections_are_counted_per_worker_and_in_prometheus(model: PreTrainedModel, prompts: list[list[int]]) -> None:
    registry = CollectorRegistry()
    v = Validator(model, EOS, prompts, CONFIG, metrics=ValidatorMetrics(registry))
    good = honest("good", model, prompts)
    bad = cheater("reward_range", honest("bad", model, prompts), CheatModels(model, model, model), DATASET)
    for step in range(2):
        v.validate(submit(good, step))
        v.validate(submit(bad, step))
    assert v.ledger.submitted == {"good": 2, "bad": 2} and v.ledger.rejected == {"bad": 2}
    assert registry.get_sample_value("vf_validator_batches_total", {"outcome": "accepted"}) == 2
    assert registry.get_sample_value("vf_validator_batches_total", {"outcome": "rejected"}) == 2
    assert registry.get_sample_value("vf_validator_rejections_total", {"check": "values"}) == 2
    assert registry.get_sample_value("vf_validator_seconds_count") == 4


@pytest.mark.parametrize(
    ("payload", "worker"),
    [
        ({"worker": "w-9", "step": "one"}, "w-9"),
        ({"worker": "bad name\n", "rollouts": []}, UNPARSED_WORKER),
        ({"worker": "x" * 500}, UNPARSED_WORKER),
        ({}, UNPARSED_WORKER),
    ],
)
def test_malformed_payloads_are_schema_rejections(
    payload: dict[str, Any], worker: str, model: PreTrainedModel, prompts: list[list[int]]
) -> None:
    v = validator(model, prompts)
    verdict = v.validate(payload)
    assert verdict.checks == {"schema"} and verdict.worker == worker and verdict.step is None
    assert "errors; first at" in verdict.findings[0].detail
    assert v.ledger.rejected == {worker: 1}


def test_a_non_object_payload_is_a_schema_rejection(model: PreTrainedModel, prompts: list[list[int]]) -> None:
    verdict = validator(model, prompts).validate(["not", "a", "batch"])  # type: ignore[arg-type]
    assert verdict.checks == {"schema"} and verdict.worker == UNPARSED_WORKER
