"""One micro-batch through the model: per-token log-probabilities (and entropies) of its own tokens.

The packer decides which samples share a forward pass (at most ``seq_len`` tokens); the
forward pass runs them as one right-padded row each, which keeps attention inside each
sample at a cost of samples × longest² instead of (Σ lengths)² for a dense mask over the
packed row (this trainer has no varlen attention kernel on CPU). The logprob of token t comes from
the logits at t−1 divided by the sampling temperature, so it is comparable with the
inference server's logprobs of the same tokens; the first token of each sample has no
prediction and gets 0 (it is never trainable).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from transformers import PreTrainedModel

from trainer_adapter.orchestrator.packing import MicroBatch


@dataclass
class MicroBatchTensors:
    """A micro-batch as ``[T]`` tensors on the trainer's device."""

    input_ids: torch.Tensor
    position_ids: torch.Tensor
    loss_mask: torch.Tensor
    advantages: torch.Tensor
    inference_logprobs: torch.Tensor
    sample_ids: torch.Tensor
    sample_lengths: list[int]
    temperature: float

    @classmethod
    def from_micro_batch(cls, mb: MicroBatch, device: torch.device) -> MicroBatchTensors:
        lengths = list(mb.sample_lengths)
        sample_ids = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths, dtype=torch.long))
        position_ids = torch.tensor(mb.position_ids, dtype=torch.long)
        return cls(
            input_ids=torch.tensor(mb.input_ids, dtype=torch.long, device=device),
            position_ids=position_ids.to(device),
            # A sample's first token has no prediction, so it can never train.
            loss_mask=(torch.tensor(mb.loss_mask, dtype=torch.bool) & (position_ids > 0)).to(device),
            advantages=torch.tensor(mb.advantages, dtype=torch.float32, device=device),
            inference_logprobs=torch.tensor(mb.inference_logprobs, dtype=torch.float32, device=device),
            sample_ids=sample_ids.to(device),
            sample_lengths=lengths,
            temperature=mb.temperature,
        )


def trainable_tokens(micro_batches: Sequence[MicroBatch]) -> int:
    """Tokens that train, as :class:`MicroBatchTensors` counts them (a sample's first token never does)."""
    return sum(m and p > 0 for mb in micro_batches for m, p in zip(mb.loss_mask, mb.position_ids))


def trainable_samples(micro_batches: Sequence[MicroBatch]) -> int:
    """Samples with at least one trainable token (what ``normalization = "sequence"`` divides by)."""
    count = 0
    for mb in micro_batches:
        start = 0
        for length in mb.sample_lengths:
            span = range(start, start + length)
            count += any(mb.loss_mask[t] and mb.position_ids[t] > 0 for t in span)
            start += length
    return count


def sync_gradients_after(model: torch.nn.Module, last: bool) -> None:
    """Under FSDP2, reduce gradients across ranks only after the step's last micro-batch."""
    setter = getattr(model, "set_requires_gradient_sync", None)
    if setter is not None:
        setter(last)


def token_logprobs(
    model: PreTrainedModel, batch: MicroBatchTensors, with_entropy: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``([T] logprobs, [T] entropies or None)`` of the micro-batch's tokens under ``model``."""
    rows, real = _padded_rows(batch)
    logits = model(input_ids=rows, attention_mask=real.long()).logits
    log_probs = torch.log_softmax(logits[:, :-1].float() / batch.temperature, dim=-1)
    picked = log_probs.gather(-1, rows[:, 1:, None]).squeeze(-1)
    zeros = picked.new_zeros(len(rows), 1)
    logprobs = torch.cat([zeros, picked], dim=1)[real]
    entropy = None
    if with_entropy:
        with torch.no_grad():
            entropy = torch.cat([zeros, -(log_probs.exp() * log_probs).sum(-1)], dim=1)[real]
    return logprobs, entropy


def _padded_rows(batch: MicroBatchTensors) -> tuple[torch.Tensor, torch.Tensor]:
    """``([S, L] ids, [S, L] bool real-token mask)``: one right-padded row per sample.

    Right padding keeps every real token's causal context exactly its own sample, and
    reading back ``[real]`` restores the flat order.
    """
    lengths = batch.sample_lengths
    longest = max(lengths)
    device = batch.input_ids.device
    real = torch.arange(longest, device=device)[None, :] < torch.tensor(lengths, device=device)[:, None]
    rows = batch.input_ids.new_zeros(len(lengths), longest)
    rows[real] = batch.input_ids
    return rows, real


__all__ = ["MicroBatchTensors", "sync_gradients_after", "token_logprobs", "trainable_samples", "trainable_tokens"]
