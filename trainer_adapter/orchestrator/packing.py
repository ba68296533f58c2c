"""Packing samples into micro-batches: first-fit decreasing into bins of ``seq_len`` tokens.

A micro-batch is its samples laid end to end (no padding), with position ids restarting
at each sample so the trainer keeps attention inside a sample. Every token carries its
trainable flag, its inference logprob (0 on prompt and environment tokens) and its
sample's advantage; every sample carries the policy version that generated it. Samples
longer than ``seq_len`` are an error, never cut: a cut sample trains on a prefix whose
reward belongs to the whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from trainer_adapter.orchestrator.rollouts import RolloutGroup


@dataclass
class Sample:
    """One training sequence: tokens with per-token mask and inference logprob, one advantage."""

    token_ids: list[int]
    loss_mask: list[bool]
    inference_logprobs: list[float]
    advantage: float
    policy_version: int = 0

    def __post_init__(self) -> None:
        if not len(self.token_ids) == len(self.loss_mask) == len(self.inference_logprobs):
            raise ValueError("token_ids, loss_mask and inference_logprobs must have the same length")

    def __len__(self) -> int:
        return len(self.token_ids)


@dataclass
class MicroBatch:
    """Samples laid end to end: one forward/backward of the trainer."""

    input_ids: list[int] = field(default_factory=list)
    position_ids: list[int] = field(default_factory=list)
    loss_mask: list[bool] = field(default_factory=list)
    advantages: list[float] = field(default_factory=list)
    inference_logprobs: list[float] = field(default_factory=list)
    sample_lengths: list[int] = field(default_factory=list)
    policy_versions: list[int] = field(default_factory=list)
    """One entry per sample."""
    temperature: float = 1.0

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def num_trainable_tokens(self) -> int:
        return sum(self.loss_mask)

    def add(self, sample: Sample) -> None:
        self.input_ids.extend(sample.token_ids)
        self.position_ids.extend(range(len(sample)))
        self.loss_mask.extend(sample.loss_mask)
        self.advantages.extend([sample.advantage] * len(sample))
        self.inference_logprobs.extend(sample.inference_logprobs)
        self.sample_lengths.append(len(sample))
        self.policy_versions.append(sample.policy_version)


def samples_from_groups(groups: Iterable[RolloutGroup]) -> list[Sample]:
    """Every training sample of every rollout, with its rollout's advantage and its group's version."""
    out: list[Sample] = []
    for group in groups:
        for rollout in group.rollouts:
            for s in rollout.samples:
                out.append(
                    Sample(
                        token_ids=s.prompt_ids + s.completion_ids,
                        loss_mask=[bool(m) for m in s.prompt_mask + s.completion_mask],
                        inference_logprobs=[0.0] * len(s.prompt_ids) + list(s.completion_logprobs),
                        advantage=rollout.advantage,
                        policy_version=group.policy_version,
                    )
                )
    return out


def pack(samples: Sequence[Sample], seq_len: int, temperature: float = 1.0) -> list[MicroBatch]:
    """First-fit decreasing: longest sample first, each into the first micro-batch with room.

    Ties keep input order, so the same samples always pack the same way.
    """
    if seq_len < 1:
        raise ValueError(f"seq_len must be positive, got {seq_len}")
    for i, sample in enumerate(samples):
        if len(sample) > seq_len:
            raise ValueError(f"sample {i} has {len(sample)} tokens, more than seq_len={seq_len}; raise seq_len "
                             "or lower max_tokens")
    bins: list[MicroBatch] = []
    for sample in sorted(samples, key=len, reverse=True):
        target = next((b for b in bins if len(b) + len(sample) <= seq_len), None)
        if target is None:
            target = MicroBatch(temperature=temperature)
            bins.append(target)
        target.add(sample)
    return bins


def distribute(micro_batches: Sequence[MicroBatch], num_ranks: int) -> list[list[MicroBatch]]:
    """Deal micro-batches to ``num_ranks`` trainer ranks, padding so every rank gets as many.

    FSDP ranks run their forward/backward passes in lock step, so a rank with fewer
    micro-batches would hang the others; the padding is a copy of the first micro-batch
    with nothing trainable (zero gradient, zero tokens counted).
    """
    if num_ranks < 1:
        raise ValueError(f"num_ranks must be positive, got {num_ranks}")
    if not micro_batches:
        raise ValueError("no micro-batches to distribute")
    per_rank = -(-len(micro_batches) // num_ranks)
    padding = [
        replace(micro_batches[0], loss_mask=[False] * len(micro_batches[0]),
                advantages=[0.0] * len(micro_batches[0]))
        for _ in range(per_rank * num_ranks - len(micro_batches))
    ]
    padded = list(micro_batches) + padding
    return [padded[rank::num_ranks] for rank in range(num_ranks)]


def packing_efficiency(micro_batches: Sequence[MicroBatch], seq_len: int) -> float:
    """Real tokens / (micro-batches × seq_len): 1.0 when every bin is full."""
    if not micro_batches:
        return 0.0
    return sum(len(m) for m in micro_batches) / (len(micro_batches) * seq_len)


__all__ = ["MicroBatch", "Sample", "distribute", "pack", "packing_efficiency", "samples_from_groups"]
