"""Per-token logprobs of a packed micro-batch equal those of each sample run alone."""

from __future__ import annotations

import pytest
import torch

from trainer_adapter.model.config import ModelConfig
from trainer_adapter.model.tiny import load_model
from trainer_adapter.orchestrator.packing import Sample, pack
from trainer_adapter.train.forward import (
    MicroBatchTensors,
    RowLayout,
    token_logprobs,
    trainable_samples,
    trainable_tokens,
)

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def model():
    model, _ = load_model(ModelConfig(seed=5))
    return model.eval()


def _reference(model, ids: list[int], temperature: float) -> torch.Tensor:
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0]
    log_probs = torch.log_softmax(logits / temperature, dim=-1)
    return torch.cat([torch.zeros(1), log_probs[:-1].gather(-1, torch.tensor(ids[1:])[:, None]).squeeze(-1)])


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_packed_logprobs_equal_separate_forwards(model, temperature: float) -> None:
    seqs = [[257, 97, 98, 99, 258], [257, 100, 101], [257, 120, 121, 122, 123, 124, 258]]
    samples = [Sample(s, [False] + [True] * (len(s) - 1), [0.0] * len(s), 1.0) for s in seqs]
    (mb,) = pack(samples, seq_len=64, temperature=temperature)
    tensors = MicroBatchTensors.from_micro_batch(mb, CPU)
    with torch.no_grad():
        logprobs, entropy = token_logprobs(model, tensors, with_entropy=True)
    expected = torch.cat([_reference(model, s, temperature) for s in sorted(seqs, key=len, reverse=True)])
    torch.testing.assert_close(logprobs, expected, atol=1e-5, rtol=1e-5)
    assert entropy is not None and entropy.shape == logprobs.shape
    starts = tensors.position_ids == 0
    assert (entropy[starts] == 0).all() and (entropy[~starts] > 0).all()


def test_a_samples_first_token_never_trains() -> None:
    samples = [Sample([1, 2], [True, True], [0.0, 0.0], 1.0), Sample([3], [True], [0.0], 1.0)]
    (mb,) = pack(samples, seq_len=8)
    tensors = MicroBatchTensors.from_micro_batch(mb, CPU)
    assert tensors.loss_mask.tolist() == [False, True, False]
    assert tensors.sample_ids.tolist() == [0, 0, 1]


def test_trainable_samples_count_those_with_a_token_that_trains() -> None:
    # [1, 2] trains its second token; [3] only its first (never trains); [4, 5] nothing; [6, 7] in a second bin.
    samples = [Sample([1, 2], [True, True], [0.0] * 2, 1.0), Sample([3], [True], [0.0], 1.0),
               Sample([4, 5], [False, False], [0.0] * 2, 1.0), Sample([6, 7], [False, True], [0.0] * 2, 1.0)]
    micro_batches = pack(samples, seq_len=4)
    assert len(micro_batches) == 2
    assert trainable_samples(micro_batches) == 2
    assert trainable_tokens(micro_batches) == 2


def test_gradient_flows_to_the_weights(model) -> None:
    (mb,) = pack([Sample([257, 97, 98], [False, True, True], [0.0] * 3, 1.0)], seq_len=8)
    tensors = MicroBatchTensors.from_micro_batch(mb, CPU)
    model.zero_grad()
    logprobs, _ = token_logprobs(model, tensors)
    (-(logprobs * tensors.loss_mask).sum()).backward()
    assert model.model.embed_tokens.weight.grad is not None
    assert model.model.embed_tokens.weight.grad.abs().sum() > 0


def _group(prompt: list[int], replies: list[list[int]], advantage: float = 1.0) -> list[Sample]:
    """A group's samples: one prompt, its replies (trainable), as samples_from_groups makes them."""
    return [Sample(prompt + r, [False] * len(prompt) + [True] * len(r), [0.0] * (len(prompt) + len(r)),
                   advantage, prompt_len=len(prompt)) for r in replies]


def _unshared(mb):
    from dataclasses import replace

    return replace(mb, shared_prefix=[0] * len(mb.sample_lengths))


@pytest.mark.parametrize("temperature", [1.0, 0.6])
def test_a_shared_prompt_gives_each_sample_its_own_logprobs_and_gradient(temperature: float) -> None:
    model, _ = load_model(ModelConfig(seed=3, num_layers=2))
    samples = (_group([257, 40, 41, 42, 43], [[50, 51, 258], [52, 258], [53, 54, 55, 56, 258]])
               + [Sample([257, 60, 61, 62], [False, True, True, True], [0.0] * 4, -1.0)]
               + _group([257, 70, 71], [[80, 258], [81, 82, 258]], advantage=-0.5))
    (mb,) = pack(samples, seq_len=64, temperature=temperature)
    assert any(mb.shared_prefix) and mb.positions < len(mb)
    results = []
    for layout in (mb, _unshared(mb)):
        tensors = MicroBatchTensors.from_micro_batch(layout, CPU)
        model.zero_grad()
        logprobs, entropy = token_logprobs(model, tensors, with_entropy=True)
        (-(logprobs * tensors.advantages * tensors.loss_mask).sum()).backward()
        grads = [p.grad.clone() for p in model.parameters()]
        results.append((logprobs.detach(), entropy, grads))
    (shared_lp, shared_ent, shared_grads), (alone_lp, alone_ent, alone_grads) = results
    torch.testing.assert_close(shared_lp, alone_lp, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(shared_ent, alone_ent, atol=1e-5, rtol=1e-5)
    for a, b in zip(shared_grads, alone_grads):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    # and each sample's logprobs are those of the sample run alone in the flat order of the micro-batch
    start = 0
    with torch.no_grad():
        for length in mb.sample_lengths:
            ids = mb.input_ids[start : start + length]
            model_lp = _reference(model.eval(), ids, temperature)
            torch.testing.assert_close(shared_lp[start : start + length], model_lp, atol=1e-5, rtol=1e-5)
            start += length
    model.train()


@pytest.mark.parametrize(("seqs", "shared", "message"), [
    ([[257, 97, 98], [257, 97, 99]], [2, 0], "cannot share"),  # the first sample has no row to join
    ([[257, 97, 98], [257, 97, 99]], [0, 3], "cannot share"),  # nothing of its own past the prompt
    ([[257, 97, 98], [257, 97, 99], [257, 97, 101]], [0, 1, 2], "cannot share"),  # one prompt length a row
    ([[257, 97, 98], [257, 99, 100]], [0, 2], "different tokens"),
    ([[257, 97, 98], [257, 97, 99]], [0], "entries for"),
])
def test_a_layout_that_cannot_be_shared_is_an_error(seqs, shared: list[int], message: str) -> None:
    (mb,) = pack([Sample(s, [False] + [True] * (len(s) - 1), [0.0] * len(s), 1.0) for s in seqs], seq_len=64)
    mb.shared_prefix = shared  # as a batch file from elsewhere could say
    with pytest.raises(ValueError, match=message):
        RowLayout.of(mb, CPU)
