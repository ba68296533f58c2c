"""Environment and tool tokens never train: on real multi-turn tool rollouts, through the trainer's loss path.

The rollouts are multiply-tool's (a call, the tool's reply, an answer) against the scripted server; their
samples (``verifiers.tokens.trajectory_to_samples`` via the orchestrator's grouping and packing) lay the tool
reply and the turn headers between the model's turns with mask 0. Whatever those positions carry as
inference logprobs and advantages, the loss and every parameter's gradient are bit for bit the same, for
every loss type; and the loss's gradient with respect to the trainer's per-token logprobs is exactly zero
there.
"""

from __future__ import annotations

import asyncio
import copy
import random

import openai
import pytest
import torch

import verifiers as vf
from trainer_adapter.loss import LossConfig, policy_loss
from trainer_adapter.model.config import ModelConfig
from trainer_adapter.model.tiny import load_model
from trainer_adapter.orchestrator.packing import MicroBatch, pack, samples_from_groups
from trainer_adapter.orchestrator.rollouts import groups_from_results
from trainer_adapter.train.distributed import init_distributed, shard_model
from trainer_adapter.train.forward import (
    MicroBatchTensors,
    token_logprobs,
    trainable_tokens,
)
from trainer_adapter.train.rl_step import rl_backward
from verifiers.testing import Reply, ScriptedServer

pytest.importorskip("multiply_tool", reason="pip install -e environments/multiply_tool")

SAMPLING = {
    "logprobs": True,
    "max_tokens": 80,
    "extra_body": {"return_token_ids": True},
}
TYPES = ("icepop", "ppo", "gspo", "cispo")


def _policy(request) -> Reply:
    """Call multiply with the question's factors, then answer with the tool's reply (sometimes off by one)."""
    question = (
        request.messages[1]["content"] if request.messages[0]["role"] == "system" else request.messages[0]["content"]
    )
    if request.assistant_turns == 0:
        a, b = question.split("*")
        call = {"id": "c1", "type": "function",
                "function": {"name": "multiply", "arguments": f'{{"a": {a}, "b": {b}}}'}}  # fmt: skip
        return Reply("", tool_calls=[call])
    wrong = random.Random(len(request.messages) + sum(map(ord, question))).random() < 0.5
    return Reply(str(int(request.messages[-1]["content"]) + wrong))


@pytest.fixture(scope="module")
def micro_batches() -> list[MicroBatch]:
    env = vf.load_environment("multiply-tool", num_train_examples=2, num_eval_examples=0)
    rows = [dict(env.get_dataset()[i]) for i in range(2) for _ in range(3)]

    async def generate():
        async with ScriptedServer(policy=_policy).serving() as base_url:
            return await env.generate(rows, openai.AsyncOpenAI(base_url=base_url, api_key="x"), "m", SAMPLING)

    results = asyncio.run(generate())
    assert all(
        [m["role"] for m in state["completion"]] == ["assistant", "tool", "assistant"] for state in results.state
    )
    grouped = groups_from_results(results, policy_version=0)
    assert grouped.failed == 0
    for group in grouped.groups:
        for i, rollout in enumerate(group.rollouts):
            rollout.advantage = (-1.0) ** i  # nonzero advantages, so trainable tokens do have gradients
    samples = samples_from_groups(grouped.groups)
    assert len(samples) == 6  # prefix-monotone template: one sample per rollout, both turns in it
    return pack(samples, seq_len=4096)


def _model():
    world = init_distributed()
    model, _ = load_model(ModelConfig(seed=5))
    shard_model(model, world)
    return world, model


def _on_policy(model, micro_batches: list[MicroBatch]) -> list[MicroBatch]:
    """The trainable tokens' inference logprobs set to the model's own, so no token is masked by its ratio."""
    out = copy.deepcopy(micro_batches)
    for mb in out:
        with torch.no_grad():
            logprobs, _ = token_logprobs(model, MicroBatchTensors.from_micro_batch(mb, torch.device("cpu")))
        mb.inference_logprobs = [lp if m else x for lp, m, x in zip(logprobs.tolist(), mb.loss_mask,
                                                                     mb.inference_logprobs)]  # fmt: skip
    return out


def _scramble_masked(micro_batches: list[MicroBatch], seed: int) -> list[MicroBatch]:
    """Arbitrary inference logprobs and advantages on every position with mask 0."""
    rng = random.Random(seed)
    out = copy.deepcopy(micro_batches)
    for mb in out:
        for i, trainable in enumerate(mb.loss_mask):
            if not trainable:
                mb.inference_logprobs[i] = -rng.uniform(0.0, 30.0)
                mb.advantages[i] = rng.uniform(-50.0, 50.0)
    return out


def _loss_and_grads(model, micro_batches: list[MicroBatch], config: LossConfig, world):
    model.zero_grad(set_to_none=True)
    metrics = rl_backward(model, micro_batches, trainable_tokens(micro_batches), config, world)
    return metrics["loss"], [p.grad.detach().clone() for p in model.parameters() if p.grad is not None]


def test_the_samples_hold_environment_tokens_with_mask_zero(
    micro_batches: list[MicroBatch],
) -> None:
    from verifiers.testing import ByteTokenizer

    tokenizer = ByteTokenizer()
    for mb in micro_batches:
        start = 0
        for length in mb.sample_lengths:
            ids, mask = (
                mb.input_ids[start : start + length],
                mb.loss_mask[start : start + length],
            )
            trained = tokenizer.decode([t for t, m in zip(ids, mask) if m])
            untrained_tail = tokenizer.decode([t for t, m in zip(ids, mask) if not m][-64:])
            assert trained.startswith('<tool_call>\n{"name": "multiply"') and "<tool_response>" not in trained
            assert "<tool_response>" in untrained_tail and untrained_tail.endswith("<|im_start|>assistant\n")
            start += length


@pytest.mark.parametrize("kind", TYPES)
def test_masked_positions_change_neither_loss_nor_gradients(micro_batches: list[MicroBatch], kind: str) -> None:
    world, model = _model()
    config = LossConfig(type=kind)
    batches = _on_policy(model, micro_batches)
    loss, grads = _loss_and_grads(model, batches, config, world)
    assert any(g.abs().sum() > 0 for g in grads)  # the trainable tokens do train
    for seed in (1, 2):
        other_loss, other_grads = _loss_and_grads(model, _scramble_masked(batches, seed), config, world)
        assert other_loss == loss
        assert all(torch.equal(a, b) for a, b in zip(grads, other_grads, strict=True))


@pytest.mark.parametrize("kind", TYPES)
def test_loss_gradient_is_zero_on_masked_tokens(micro_batches: list[MicroBatch], kind: str) -> None:
    _, model = _model()
    (mb, *_) = _scramble_masked(_on_policy(model, micro_batches), seed=3)
    batch = MicroBatchTensors.from_micro_batch(mb, torch.device("cpu"))
    with torch.no_grad():
        logprobs, entropy = token_logprobs(model, batch, with_entropy=True)
    logprobs = (logprobs + 0.01).requires_grad_(True)  # a little off-policy, so ratios are not all 1
    out = policy_loss(logprobs, batch.inference_logprobs, batch.advantages, batch.loss_mask, batch.sample_ids,
                      LossConfig(type=kind), entropy=entropy)  # fmt: skip
    (grad,) = torch.autograd.grad(out.loss, logprobs)
    assert torch.all(grad[~batch.loss_mask] == 0)
    assert grad[batch.loss_mask].abs().sum() > 0
