"""The validator's prefill: a group's turns in one padded pass read the same as one pass each."""

from __future__ import annotations

import torch

from trainer_adapter.model.tokenizer import build_tokenizer
from trainer_adapter.validate.prefill import recompute, recompute_many
from trainer_adapter.validate.workers import arithmetic_prompts, peaked_tiny_model

EOS = build_tokenizer().eos_token_id


def test_turns_of_different_lengths_batched_read_as_each_alone() -> None:
    model = peaked_tiny_model(seed=0)
    prompts = arithmetic_prompts(3)
    generator = torch.Generator().manual_seed(0)
    turns = [(prompts[i % 3], torch.randint(0, 250, (n,), generator=generator).tolist())
             for i, n in enumerate((1, 5, 17, 32, 3))]
    together = recompute_many(model, turns, 0.7, EOS, batch_size=2)  # three passes, padded rows in each
    for (prompt, completion), seen in zip(turns, together, strict=True):
        alone = recompute(model, prompt, completion, 0.7, EOS)
        assert seen.hidden.shape == alone.hidden.shape == (len(completion), model.config.hidden_size)
        assert torch.allclose(seen.hidden, alone.hidden, atol=1e-5)  # the measured honest error is 2e-5 .. 3e-4
        assert max(abs(a - b) for a, b in zip(seen.logprobs, alone.logprobs)) < 1e-5
        assert abs(seen.eos_prob - alone.eos_prob) < 1e-6
