"""An RL step's backward on the tiny model, for every loss type: on-policy data shows no mismatch, advantages steer
the policy, micro-batches accumulate to one batch in both normalisations, and the KL penalty reads a frozen
reference."""

from __future__ import annotations

import math

import pytest
import torch

from trainer_adapter.loss.config import LossConfig
from trainer_adapter.model.config import ModelConfig
from trainer_adapter.model.tiny import load_model
from trainer_adapter.orchestrator.packing import Sample, pack
from trainer_adapter.train.distributed import init_distributed, shard_model
from trainer_adapter.train.forward import MicroBatchTensors, token_logprobs, trainable_samples, trainable_tokens
from trainer_adapter.train.rl_step import rl_backward, step_normalizer

PROMPT = [257, 117, 115, 101, 114, 10, 49, 43, 50, 258, 10, 257, 97, 10]


def _setup():
    world = init_distributed()
    model, _ = load_model(ModelConfig(seed=11))
    shard_model(model, world)
    return world, model


TYPES = ("icepop", "ppo", "gspo", "cispo")


def _on_policy(model, completions: list[list[int]], advantages: list[float], seq_len: int = 256):
    """Samples whose inference logprobs are the model's own (what a server with the same weights records)."""
    samples = [Sample(PROMPT + c, [False] * len(PROMPT) + [True] * len(c), [0.0] * (len(PROMPT) + len(c)), a)
               for c, a in zip(completions, advantages)]
    micro_batches = pack(samples, seq_len=seq_len)
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


@pytest.mark.parametrize("normalization", ["token", "sequence"])
@pytest.mark.parametrize("kind", TYPES)
def test_positive_advantage_raises_and_negative_lowers_likelihood(kind: str, normalization: str) -> None:
    world, model = _setup()
    good, bad = [51, 258], [52, 53, 258]
    before = _mean_logprob(model, good), _mean_logprob(model, bad)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)  # small: the first-order direction, no overshoot
    micro_batches = _on_policy(model, [good, bad], [1.0, -1.0])
    config = LossConfig(type=kind, normalization=normalization)
    rl_backward(model, micro_batches, step_normalizer(micro_batches, config, world), config, world)
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


@pytest.mark.parametrize("kind", ["ppo", "gspo", "cispo"])
def test_every_type_runs_on_policy_and_reports_its_metrics(kind: str) -> None:
    world, model = _setup()
    micro_batches = _on_policy(model, [[51, 258], [52, 53, 258]], [0.5, -0.5])
    metrics = rl_backward(model, micro_batches, trainable_tokens(micro_batches), LossConfig(type=kind), world)
    assert metrics["mismatch_kl"] == pytest.approx(0.0, abs=1e-6)
    assert metrics["clipped"] == 0.0 and metrics["masked"] == 0.0  # r = 1: inside every band
    assert "masked_low" not in metrics and "ref_kl" not in metrics  # icepop's band, and no reference
    if kind == "cispo":  # ℓ = -A·log π (w = 1): its value is the advantage-weighted log-likelihood
        (mb,) = micro_batches
        expected = -sum(a * lp for a, lp, m in zip(mb.advantages, mb.inference_logprobs, mb.loss_mask) if m) / 5
    else:  # r = s = 1: ℓ = -A, as for icepop
        expected = 0.1
    assert metrics["loss"] == pytest.approx(expected, abs=1e-5)
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


@pytest.mark.parametrize("normalization", ["token", "sequence"])
@pytest.mark.parametrize("kind", TYPES)
def test_micro_batches_accumulate_to_one_batch(kind: str, normalization: str) -> None:
    world, model = _setup()
    completions, advantages = [[51, 258], [52, 53, 54, 258], [55, 258]], [1.0, -0.5, -0.5]
    config = LossConfig(type=kind, normalization=normalization, kl_coef=0.1)
    reference, _ = load_model(ModelConfig(seed=12))  # a different model, so the penalty has a gradient
    shard_model(reference.requires_grad_(False), world)
    packings = [_on_policy(model, completions, advantages, seq_len=n) for n in (256, len(PROMPT) + 4)]
    assert [len(p) for p in packings] == [1, 3]  # one micro-batch, then one per sample
    grads, losses = [], []
    # All no-grad forwards (in _on_policy) come first: under FSDP2 one between two backwards makes the root unit's
    # stale gradient reappear in the next.
    for micro_batches in packings:
        for mb in micro_batches:  # off policy, so the ratios differ between tokens (by position in the sample)
            mb.inference_logprobs = [lp - 0.3 * (p % 3) * m for lp, m, p in
                                     zip(mb.inference_logprobs, mb.loss_mask, mb.position_ids)]
        model.zero_grad(set_to_none=True)
        metrics = rl_backward(model, micro_batches, step_normalizer(micro_batches, config, world), config, world,
                              reference)
        losses.append(metrics["loss"])
        grads.append(torch.cat([_full(p.grad).flatten() for p in model.parameters()]))
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    assert torch.allclose(grads[0], grads[1], rtol=1e-4, atol=1e-7)


def _full(grad: torch.Tensor) -> torch.Tensor:
    """A gradient as one tensor: under FSDP2 (several ranks) it is a DTensor shard."""
    full = getattr(grad, "full_tensor", None)
    return full() if full is not None else grad


def test_step_normalizer_counts_tokens_or_samples() -> None:
    world, model = _setup()
    micro_batches = _on_policy(model, [[51, 258], [52, 53, 258]], [0.5, -0.5], seq_len=len(PROMPT) + 3)
    micro_batches[0].loss_mask = [False] * len(micro_batches[0])  # a sample with nothing trainable does not count
    assert step_normalizer(micro_batches, LossConfig(), world) == trainable_tokens(micro_batches)
    assert step_normalizer(micro_batches, LossConfig(normalization="sequence"), world) == 1
    assert trainable_samples(micro_batches) == 1


def test_kl_penalty_reads_a_frozen_reference() -> None:
    world, model = _setup()
    reference, _ = load_model(ModelConfig(seed=11))  # the same initial weights, frozen
    shard_model(reference.requires_grad_(False), world)
    good = [51, 258]
    config = LossConfig(kl_coef=0.5)
    micro_batches = _on_policy(model, [good], [1.0])
    first = rl_backward(model, micro_batches, trainable_tokens(micro_batches), config, world, reference)
    assert first["ref_kl"] == pytest.approx(0.0, abs=1e-6)
    torch.optim.SGD(model.parameters(), lr=0.5).step()
    model.zero_grad(set_to_none=True)
    micro_batches = _on_policy(model, [good], [1.0])
    second = rl_backward(model, micro_batches, trainable_tokens(micro_batches), config, world, reference)
    assert second["ref_kl"] > 0
    assert all(p.grad is None for p in reference.parameters())
    with pytest.raises(ValueError, match="kl_coef > 0 needs reference_logprobs"):
        rl_backward(model, micro_batches, trainable_tokens(micro_batches), config, world)
