"""The orchestrator's group validator, in-process: a model turn per rollout sampled from the peaked tiny model,
commitments from a stand-in server that computes them with the weights it holds (the real route: test_rl_validation
and tests/trainer_adapter/validate/test_vllm_commitment.py)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from prometheus_client import CollectorRegistry
from transformers import PreTrainedModel

import verifiers as vf
from tests.trainer_adapter.orchestrator.test_orchestrator import RecordingUpdater, _half_right
from trainer_adapter.inference.errors import InferenceServerError, WeightsFolderError
from trainer_adapter.model.tokenizer import build_tokenizer
from trainer_adapter.orchestrator.metrics import OrchestratorMetrics
from trainer_adapter.orchestrator.orchestrator import Orchestrator, OrchestratorConfig
from trainer_adapter.orchestrator.validation import (
    CommitmentUnavailable,
    GroupValidator,
    ValidationConfig,
    group_turns,
    version_of_folder,
)
from trainer_adapter.train.export import write_hf_folder
from trainer_adapter.validate.cheats import perturbed
from trainer_adapter.validate.commitment import commit
from trainer_adapter.validate.metrics import ValidatorMetrics
from trainer_adapter.validate.prefill import recompute
from trainer_adapter.validate.workers import Sampling, arithmetic_prompts, peaked_tiny_model, sample, submitted_rollout

EOS = build_tokenizer().eos_token_id
SAMPLING = Sampling(temperature=1.0, max_tokens=24)
CONFIG = ValidationConfig(enabled=True, min_groups=2, max_rejection_rate=0.4)


class Results(dict):
    """What ``env.generate`` returns, as far as the validator reads it."""

    def __init__(self, outputs: list[dict[str, Any]], state: list[dict[str, Any]]) -> None:
        super().__init__(outputs=outputs)
        self.state = state


class StandIn:
    """A server's ``/commitment``: commitments by the weights it holds, and the folder it says it loaded."""

    def __init__(self, model: PreTrainedModel, weight_dir: str | None) -> None:
        self.model, self.weight_dir = model, weight_dir
        self.error: Exception | None = None
        self.calls = 0

    async def commitments(self, rollouts: list[dict[str, list[int]]], interval: int, k: int) -> dict[str, Any]:
        self.calls += 1
        if self.error is not None:
            raise self.error
        made = [commit(recompute(self.model, r["prompt_ids"], r["completion_ids"], 1.0, EOS).hidden, interval, k)
                for r in rollouts]
        return {"commitments": [c.model_dump() for c in made], "weights_version": 1, "weight_dir": self.weight_dir}


@pytest.fixture(scope="module")
def model() -> PreTrainedModel:
    return peaked_tiny_model(seed=0)


@pytest.fixture(scope="module")
def folders(model: PreTrainedModel, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("weights")
    tokenizer = build_tokenizer()
    other = perturbed(model, seed=1, scale=0.01)
    return {"base": write_hf_folder(model.state_dict(), model, tokenizer, out / "base"),
            "step_1": write_hf_folder(other.state_dict(), other, tokenizer, out / "weights" / "step_1")}


def group(model: PreTrainedModel, seed: int, size: int = 4, edit: bool = False) -> Results:
    """``size`` rollouts of one arithmetic prompt, one turn each, as vLLM would have returned them."""
    prompt = arithmetic_prompts(4)[seed % 4]
    generator = torch.Generator().manual_seed(seed)
    outputs, states = [], []
    for _ in range(size):
        turn = submitted_rollout(model, 0, prompt, sample(model, prompt, SAMPLING, EOS, generator), SAMPLING)
        ids = list(turn.completion_ids)
        if edit:  # what the server hands back differs from what it sampled
            ids[len(ids) // 2] = (ids[len(ids) // 2] + 7) % 256
        tokens = {"prompt_ids": prompt, "completion_ids": ids, "completion_logprobs": turn.logprobs}
        response = {"choices": [{"finish_reason": turn.finish_reason, "stop_reason": None}]}
        outputs.append({"example_id": 0, "reward": 0.0})
        states.append({"trajectory": [{"tokens": tokens, "response": response}]})
    return Results(outputs, states)


def validator(*sources: StandIn, folders: dict[str, Path]) -> GroupValidator:
    made = GroupValidator(CONFIG, sources, temperature=1.0, max_tokens=SAMPLING.max_tokens, keep_versions=2,
                          metrics=ValidatorMetrics(CollectorRegistry()))
    made.add_version(0, str(folders["base"]), start=True)
    return made


async def test_an_honest_servers_groups_pass_every_check(model: PreTrainedModel, folders: dict[str, Path]) -> None:
    v = validator(StandIn(model, None), folders=folders)
    checks = [await v.check(0, group(model, seed), dispatched=0) for seed in range(3)]
    assert all(c is not None and c.accepted and c.tokens_checked for c in checks), [c.verdict for c in checks if c]
    assert v.ledger.submitted["server_0"] == 3 and not v.ledger.rejected
    assert not v.excluded(0)


async def test_edited_tokens_are_rejected_and_the_server_excluded(
    model: PreTrainedModel, folders: dict[str, Path]
) -> None:
    v = validator(StandIn(model, None), StandIn(model, None), folders=folders)
    first = await v.check(1, group(model, 0, edit=True), dispatched=0)
    assert first is not None and not first.accepted and "logprobs" in first.verdict.checks
    assert not v.excluded(1)  # one group is under min_groups
    await v.check(1, group(model, 1, edit=True), dispatched=0)
    assert v.excluded(1) and not v.excluded(0)
    assert v.ledger.by_check["server_1"]["logprobs"] == 2


async def test_a_server_with_other_weights_is_rejected(model: PreTrainedModel, folders: dict[str, Path]) -> None:
    other = perturbed(model, seed=1, scale=0.01)
    v = validator(StandIn(other, None), folders=folders)
    check = await v.check(0, group(other, 2), dispatched=0)  # sampled and committed by the other weights
    assert check is not None and {"commitment", "logprobs"} <= check.verdict.checks


async def test_each_version_is_checked_against_its_own_weights(
    model: PreTrainedModel, folders: dict[str, Path]
) -> None:
    other = perturbed(model, seed=1, scale=0.01)
    server = StandIn(other, str(folders["step_1"]))
    v = validator(server, folders=folders)
    v.add_version(1, str(folders["step_1"]))
    check = await v.check(0, group(other, 3), dispatched=1)
    assert check is not None and check.accepted and check.tokens_checked and check.verdict.step == 1
    # Sent out at version 0, committed at version 1 (an update landed in between): the commitment alone
    straddled = await v.check(0, group(model, 3), dispatched=0)
    assert straddled is not None and straddled.accepted and not straddled.tokens_checked


async def test_a_group_cancelled_while_waiting_leaves_the_others_checks_alone(
    model: PreTrainedModel, folders: dict[str, Path]
) -> None:
    other = perturbed(model, seed=1, scale=0.01)
    v = validator(StandIn(other, str(folders["step_1"])), folders=folders)
    v._executor.submit(time.sleep, 0.5)  # the validator thread busy: version 1 waits to be loaded
    v.add_version(1, str(folders["step_1"]))
    waiting = asyncio.create_task(v.check(0, group(other, 3), dispatched=1))
    await asyncio.sleep(0.2)
    waiting.cancel()  # as the orchestrator cancels a stale group, or one on a server that went down
    check = await v.check(0, group(other, 4), dispatched=1)
    assert check is not None and check.accepted


async def test_a_version_the_run_never_sent_is_rejected(model: PreTrainedModel, folders: dict[str, Path]) -> None:
    v = validator(StandIn(model, "/elsewhere/weights/step_9"), folders=folders)
    check = await v.check(0, group(model, 0), dispatched=0)
    assert check is not None and not check.accepted
    assert "version 9, which this run never sent" in check.verdict.findings[0].detail


async def test_bad_answers_from_the_server_are_rejected_not_raised(
    model: PreTrainedModel, folders: dict[str, Path]
) -> None:
    server = StandIn(model, None)
    v = validator(server, folders=folders)
    server.error = WeightsFolderError("/commitment: rollout 0: token ids must lie in [0, 256)")
    refused = await v.check(0, group(model, 0), dispatched=0)
    assert refused is not None and refused.verdict.checks == {"commitment"}
    assert "token ids must lie" in refused.verdict.findings[0].detail

    async def short(rollouts: list[dict[str, list[int]]], interval: int, k: int) -> dict[str, Any]:
        return {"commitments": [], "weights_version": 1, "weight_dir": None}  # fewer commitments than turns

    server.commitments = short  # type: ignore[method-assign]
    malformed = await v.check(0, group(model, 0), dispatched=0)
    assert malformed is not None and malformed.verdict.checks == {"schema"}


async def test_an_unreachable_server_loses_the_group(model: PreTrainedModel, folders: dict[str, Path]) -> None:
    server = StandIn(model, None)
    server.error = InferenceServerError("POST http://127.0.0.1:9/commitment: ConnectError")
    v = validator(server, folders=folders)
    with pytest.raises(CommitmentUnavailable):
        await v.check(0, group(model, 0), dispatched=0)
    assert not v.ledger.submitted  # not the server's fault: not counted against it


async def test_failed_rollouts_are_skipped_and_an_empty_group_is_not_checked(
    model: PreTrainedModel, folders: dict[str, Path]
) -> None:
    results = group(model, 0, size=2)
    results["outputs"][0]["error"] = "ModelError"
    assert len(group_turns(results)) == 1
    results["outputs"][1]["error"] = "ModelError"
    server = StandIn(model, None)
    assert await validator(server, folders=folders).check(0, results, dispatched=0) is None
    assert server.calls == 0


def test_turns_keep_how_each_one_ended() -> None:
    def turn(finish: str, stop_reason: object) -> dict[str, Any]:
        tokens = {"prompt_ids": [1], "completion_ids": [2], "completion_logprobs": [-0.1]}
        return {"tokens": tokens, "response": {"choices": [{"finish_reason": finish, "stop_reason": stop_reason}]}}

    results = Results([{}], [{"trajectory": [turn("stop", None), turn("stop", "</tool>"), turn("length", None),
                                             turn("tool_calls", None)]}])
    ends = [(t["finish_reason"], t["stop_string"]) for t in group_turns(results)]
    assert ends == [("stop", False), ("stop", True), ("length", False), ("stop", False)]


@pytest.mark.parametrize(("folder", "version"), [
    (None, 3), ("/run/weights/step_12", 12), ("/run/base", 3), ("/fetch/server_0/step_0", 0), ("/m/step_x", 3),
    ("/sft/weights/step_60", 3), ("/sft/weights/../weights/step_60", 3), ("/run/weights/step_5", 5),
])
def test_the_version_a_folder_holds(folder: str | None, version: int) -> None:
    # a folder the run sent is its version whatever its name (an SFT's step_60 as the start weights)
    sent = {"/sft/weights/step_60": 3, "/run/weights/step_5": 5}
    assert version_of_folder(folder, sent, start_version=3) == version


def test_the_config_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        ValidationConfig(commitment_tolerance=0)
    with pytest.raises(ValueError):
        ValidationConfig(max_rejection_rate=1.5)
    with pytest.raises(ValueError):
        ValidationConfig(unknown=1)


# -- in the orchestrator --------------------------------------------------------------------------------------


async def test_servers_whose_groups_are_all_rejected_are_excluded_and_the_run_stops(
    tmp_path: Path, serve, client_for, model: PreTrainedModel, folders: dict[str, Path]
) -> None:
    env = vf.load_environment("reverse-text", num_train_examples=40, num_eval_examples=0)
    clients = [client_for(serve(_half_right())), client_for(serve(_half_right()))]
    sources = [StandIn(model, None), StandIn(model, None)]
    for source in sources:  # a scripted server runs no model: it cannot commit to what it sent
        source.error = WeightsFolderError("/commitment: rollout 0: token ids must lie in [0, 256)")
    config = OrchestratorConfig(batch_size=8, rollouts_per_example=4, max_inflight_groups=4, max_tokens=32,
                                weights_poll_s=0.02, validation=CONFIG)
    v = GroupValidator(CONFIG, sources, temperature=1.0, max_tokens=32, keep_versions=2,
                       metrics=ValidatorMetrics(CollectorRegistry()))
    orchestrator = Orchestrator(config, env, clients, [RecordingUpdater(), RecordingUpdater()], tmp_path,
                                weight_dir=str(folders["base"]), validator=v,
                                metrics=OrchestratorMetrics(CollectorRegistry()))
    with pytest.raises(InferenceServerError, match="all 2 inference servers were excluded by the validator"):
        await asyncio.wait_for(orchestrator.run(2), timeout=60)
    v.close()
    assert orchestrator.servers.counts["server_excluded"] == 2
    counts = orchestrator.counts
    assert counts["invalid/server_0"] >= CONFIG.min_groups and counts["invalid/server_1"] >= CONFIG.min_groups
    assert counts["invalid_groups"] == counts["validated_groups"] == sum(s.calls for s in sources)
    assert counts["invalid_rollouts"] == 4 * counts["invalid_groups"]
    assert not (tmp_path / "orchestrator_metrics.jsonl").exists()  # nothing rejected ever reached a batch
