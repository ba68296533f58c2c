"""One micro-batch through the model: per-token log-probabilities (and entropies) of its own tokens.

The packer decides which samples share a forward pass (at most ``seq_len`` positions); the
forward pass runs them as one right-padded row each, which keeps attention inside each
sample at a cost of samples × longest² instead of (Σ lengths)² for a dense mask over the
packed row (this trainer has no varlen attention kernel on CPU). Samples the packer marked as
sharing a prompt (``MicroBatch.shared_prefix``) run as one row instead: the prompt once, then
each sample's own tokens, each attending to the prompt and to itself only, with the position ids
it would have alone, so every logprob (and gradient) is that of the sample run alone. The logprob
of token t comes from the logits at t−1 divided by the sampling temperature, so it is comparable
with the inference server's logprobs of the same tokens; the first token of each sample has no
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
    layout: RowLayout

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
            layout=RowLayout.of(mb, device),
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
    layout = batch.layout
    if layout.shares:
        logits = model(input_ids=layout.rows, position_ids=layout.position_ids,
                       attention_mask=layout.attention_mask()).logits
    else:  # one sample a row: the model's own causal mask over right padding (the fast path of every kernel)
        logits = model(input_ids=layout.rows, attention_mask=layout.real.long()).logits
    # The logits that predict each flat token: those at its predecessor's place in the rows.
    predicting = logits[layout.row_of, layout.predictor].float() / batch.temperature
    log_probs = torch.log_softmax(predicting, dim=-1)
    first = batch.position_ids == 0
    logprobs = log_probs.gather(-1, batch.input_ids[:, None]).squeeze(-1).masked_fill(first, 0.0)
    entropy = None
    if with_entropy:
        with torch.no_grad():
            entropy = (-(log_probs.exp() * log_probs).sum(-1)).masked_fill(first, 0.0)
    return logprobs, entropy


@dataclass
class RowLayout:
    """Where a micro-batch's flat tokens sit in the ``[R, L]`` rows the model runs on.

    A row holds one sample, or samples sharing a prompt: the prompt's ``p`` tokens once, then
    each sample's tokens past it. ``segment`` numbers a row's parts (−1 the shared prompt, ``k``
    the k-th sample's own tokens); padding has its own part, so it attends only to itself.
    """

    rows: torch.Tensor
    position_ids: torch.Tensor
    segment: torch.Tensor
    real: torch.Tensor
    row_of: torch.Tensor
    """Per flat token: its row."""
    predictor: torch.Tensor
    """Per flat token: the column of the token before it in its sample (0 for a sample's first token)."""
    shares: bool

    @classmethod
    def of(cls, mb: MicroBatch, device: torch.device) -> RowLayout:
        """The rows of ``mb``, built on the host from its lists and moved to ``device`` once (building them
        from device tensors would copy each one back and stall the accelerator on every micro-batch)."""
        lengths = list(mb.sample_lengths)
        shared = list(mb.shared_prefix) or [0] * len(lengths)
        if len(shared) != len(lengths):
            raise ValueError(f"shared_prefix has {len(shared)} entries for {len(lengths)} samples")
        columns: list[torch.Tensor] = []  # per sample: its tokens' columns in its row
        row_index: list[int] = []  # per sample: its row
        row_lengths: list[int] = []
        row_prompt: list[int] = []  # per row: the shared prompt's length (0: one sample)
        for j, (length, p) in enumerate(zip(lengths, shared)):
            if p == 0:
                row_index.append(len(row_lengths))
                row_lengths.append(length)
                row_prompt.append(0)
                columns.append(torch.arange(length))
                continue
            if j == 0 or not p < length or not p <= lengths[j - 1] or row_prompt[-1] not in (0, p):
                raise ValueError(f"sample {j} ({length} tokens) cannot share {p} tokens with the row before it "
                                 f"(prompt {row_prompt[-1] if row_prompt else None})")
            row_prompt[-1] = p
            start = row_lengths[-1]
            row_index.append(len(row_lengths) - 1)
            row_lengths[-1] += length - p
            columns.append(torch.cat([torch.arange(p), torch.arange(start, start + length - p)]))
        longest = max(row_lengths)
        counts = torch.tensor(lengths, dtype=torch.long)
        row_of = torch.repeat_interleave(torch.tensor(row_index), counts)
        flat_columns = torch.cat(columns)
        ids = torch.tensor(mb.input_ids, dtype=torch.long)
        rows = ids.new_zeros(len(row_lengths), longest)
        rows[row_of, flat_columns] = ids
        if not torch.equal(rows[row_of, flat_columns], ids):
            raise ValueError("samples marked as sharing a prompt have different tokens in it")
        positions = torch.tensor(mb.position_ids, dtype=torch.long)
        position_ids = torch.zeros(len(row_lengths), longest, dtype=torch.long)
        position_ids[row_of, flat_columns] = positions
        real = torch.arange(longest)[None, :] < torch.tensor(row_lengths)[:, None]
        # padding: a part of its own per column; the prompt: -1; each sample's own tokens: its index
        segment = torch.arange(longest).repeat(len(row_lengths), 1) + len(lengths)
        own = positions >= torch.tensor(row_prompt)[row_of]
        sample_ids = torch.repeat_interleave(torch.arange(len(lengths)), counts)
        segment[row_of, flat_columns] = torch.where(own, sample_ids, -1)
        predictor = torch.cat([torch.cat([c[:1], c[:-1]]) for c in columns])
        return cls(rows=rows.to(device), position_ids=position_ids.to(device), segment=segment.to(device),
                   real=real.to(device), row_of=row_of.to(device), predictor=predictor.to(device),
                   shares=any(row_prompt))

    def attention_mask(self) -> torch.Tensor:
        """``[R, 1, L, L]`` bool, True where a query may attend a key: earlier or same columns of the shared
        prompt or of its own part."""
        query, key = self.segment[:, :, None], self.segment[:, None, :]
        columns = torch.arange(self.rows.shape[1], device=self.rows.device)
        causal = columns[None, :] <= columns[:, None]
        return (causal & ((key == -1) | (key == query)))[:, None]


__all__ = [
    "MicroBatchTensors", "RowLayout", "sync_gradients_after", "token_logprobs", "trainable_samples", "trainable_tokens"
]
