"""An RL step's backward on the tiny model: on-policy data shows no mismatch, and advantages steer the policy."""

from __future__ import annotations

import math

import pytest
import torch

from trainer_adapter.loss import LossConfig
from trainer_adapter.model.tiny import ModelConfig, load_model
from trainer_adapter.orchestrator.packing import Sample, pack
from trainer_adapter.train.distributed import init_distributed, shard_model
from trainer_adapter.train.forward import MicroBatchTensors, token_logprobs, trainable_tokens
from trainer_adapter.train.rl_step import rl_backward

PROMPT = [257, 117, 115, 101, 114, 10, 49, 43, 50, 258, 10, 257, 97, 10]


def _setup():
    world = init_distributed()
    model, _ = load_model(ModelConfig(seed=11))
    shard_model(model, world)
    return world, model


def _on_policy(model, completions: list[list[int]], advantages: list[float]):
    """Samples whose inference logprobs are the model's own (what a server with the same weights records)."""
    samples = [Sample(PROMPT + c, [False] * len(PROMPT) + [True] * len(c), [0.0] * (len(PROMPT) + len(c)), a)
               for c, a in zip(completions, advantages)]
    micro_batches = pack(samples, seq_len=256)
    for mb in micro_batches:
        with torch.no_grad():
            logprobs, _ = token_logprobs(model, MicroBatchTensors.from_micro_batch(mb, torch.device("cpu")))
        mb.inference_logprobs = [lp if m else 0.0 for lp, m in zip(logprobs.tolist(), mb.loss_mask)]
    return micro_batches


def _mean_logprob(model, completion: list[int]) -> float:
    (mb,) = _on_policy(model, [completion], [0.0])
    return sum(mb.inference_logprobs) / len(completion)


def test_on_policy_batch_has_no_mismatch_and_nothing_masked() -> None:
    world, model = _setup()
    micro_batches = _on_policy(model, [[51, 258], [52, 53, 258]], [0.5, -0.5])
    metrics = rl_backward(model, micro_batches, trainable_tokens(micro_batches), LossConfig(), world)
    assert metrics["mismatch_kl"] == pytest.approx(0.0, abs=1e-6)
    assert metrics["masked"] == 0.0
    assert metrics["trainable_tokens"] == 5
    assert metrics["entropy"] > 0
    # r = 1 everywhere: loss = -(2·0.5 + 3·(-0.5)) / 5
    assert metrics["loss"] == pytest.approx(0.1, abs=1e-5)


def test_positive_advantage_raises_and_negative_lowers_likelihood() -> None:
    world, model = _setup()
    good, bad = [51, 258], [52, 53, 258]
    before = _mean_logprob(model, good), _mean_logprob(model, bad)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    micro_batches = _on_policy(model, [good, bad], [1.0, -1.0])
    rl_backward(model, micro_batches, trainable_tokens(micro_batches), LossConfig(), world)
    optimizer.step()
    after = _mean_logprob(model, good), _mean_logprob(model, bad)
    assert after[0] > before[0] and after[1] < before[1]


def test_off_policy_tokens_are_masked_and_reported() -> None:
    world, model = _setup()
    (mb,) = _on_policy(model, [[51, 52, 53, 258]], [1.0])
    first = next(i for i, m in enumerate(mb.loss_mask) if m)
    mb.inference_logprobs[first] -= math.log(10.0)  # the server found it 10x less likely: r = 10 > 5
    metrics = rl_backward(model, [mb], trainable_tokens([mb]), LossConfig(), world)
    assert metrics["masked_high"] == pytest.approx(1 / 4)
    assert metrics["mismatch_kl"] == pytest.approx((10 - math.log(10) - 1) / 4, rel=1e-4)
