"""Packing samples into micro-batches: first-fit decreasing into bins of ``seq_len`` positions.

A micro-batch is its samples laid end to end (no padding), with position ids restarting
at each sample so the trainer keeps attention inside a sample. Every token carries its
trainable flag, its inference logprob (0 on prompt and environment tokens) and its
sample's advantage; every sample carries the policy version that generated it. Samples
longer than ``seq_len`` are an error, never cut: a cut sample trains on a prefix whose
reward belongs to the whole.

Samples with the same prompt (a group's rollouts) are packed side by side, and each one after
the first records how many leading tokens it shares with it (``shared_prefix``): the trainer
computes that prompt once for all of them (:mod:`trainer_adapter.train.forward`). A bin's size
is what the trainer computes, a shared prompt counted once. In the main job a group's eight
replies of ~5 tokens share a 24-token prompt, so this is 3× fewer positions a step.
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
    prompt_len: int = 0
    """Leading tokens that samples with the same ones may share in the trainer's forward pass (0: none)."""

    def __post_init__(self) -> None:
        if not len(self.token_ids) == len(self.loss_mask) == len(self.inference_logprobs):
            raise ValueError("token_ids, loss_mask and inference_logprobs must have the same length")
        if not 0 <= self.prompt_len <= len(self.token_ids):
            raise ValueError(f"prompt_len {self.prompt_len} is outside the sample's {len(self.token_ids)} tokens")

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
    shared_prefix: list[int] = field(default_factory=list)
    """Per sample, its leading tokens equal to the previous sample's that the trainer computes once: 0 starts a
    new row, ``p > 0`` joins the previous sample's row, whose first ``p`` tokens it shares (every sample of a row
    shares the same ``p`` with its first). Empty: nothing shared."""
    temperature: float = 1.0

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def positions(self) -> int:
        """Positions the trainer computes: every token, a shared prefix once."""
        return len(self.input_ids) - sum(self.shared_prefix)

    @property
    def num_trainable_tokens(self) -> int:
        return sum(self.loss_mask)

    def add(self, sample: Sample, shared: int = 0) -> None:
        """Append ``sample``, sharing its first ``shared`` tokens with the sample before it."""
        self.input_ids.extend(sample.token_ids)
        self.position_ids.extend(range(len(sample)))
        self.loss_mask.extend(sample.loss_mask)
        self.advantages.extend([sample.advantage] * len(sample))
        self.inference_logprobs.extend(sample.inference_logprobs)
        self.sample_lengths.append(len(sample))
        self.policy_versions.append(sample.policy_version)
        self.shared_prefix.append(shared)


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
                        prompt_len=len(s.prompt_ids),
                    )
                )
    return out


def pack(samples: Sequence[Sample], seq_len: int, temperature: float = 1.0) -> list[MicroBatch]:
    """First-fit decreasing over prompt units: the largest first, each into the first micro-batch with room.

    A unit is the samples with one prompt (``Sample.prompt_len`` tokens), which share it when each
    has a token past it; a unit larger than ``seq_len`` is split into runs that fit. Ties keep the
    order of the units' first samples, so the same samples always pack the same way.
    """
    if seq_len < 1:
        raise ValueError(f"seq_len must be positive, got {seq_len}")
    for i, sample in enumerate(samples):
        if len(sample) > seq_len:
            raise ValueError(f"sample {i} has {len(sample)} tokens, more than seq_len={seq_len}; raise seq_len "
                             "or lower max_tokens")
    bins: list[MicroBatch] = []
    for unit in sorted(_units(samples, seq_len), key=lambda u: u.positions, reverse=True):
        target = next((b for b in bins if b.positions + unit.positions <= seq_len), None)
        if target is None:
            target = MicroBatch(temperature=temperature)
            bins.append(target)
        for i, sample in enumerate(unit.samples):
            target.add(sample, shared=unit.shared if i else 0)
    return bins


@dataclass
class _Unit:
    """Samples packed side by side, all after the first sharing its first ``shared`` tokens."""

    samples: list[Sample]
    shared: int

    @property
    def positions(self) -> int:
        return sum(len(s) for s in self.samples) - self.shared * (len(self.samples) - 1)


def _units(samples: Sequence[Sample], seq_len: int) -> list[_Unit]:
    """The samples as units, in order of each unit's first sample: one per prompt, one per sample without one."""
    groups: dict[object, list[Sample]] = {}
    for i, sample in enumerate(samples):
        key = tuple(sample.token_ids[: sample.prompt_len]) if sample.prompt_len else i
        groups.setdefault(key, []).append(sample)
    units: list[_Unit] = []
    for members in groups.values():
        prompt = members[0].prompt_len
        # Every sample keeps a token of its own past the prompt: the first token after it is the one predicted
        # from the prompt's last position, and a sample that is all prompt has nothing to add to the row.
        shared = prompt if len(members) > 1 and all(len(s) > prompt for s in members) else 0
        run = _Unit([], shared)
        for sample in members:
            if run.samples and run.positions + len(sample) - shared > seq_len:
                units.append(run)
                run = _Unit([], shared)
            run.samples.append(sample)
        units.append(run)
    return units


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
    """Computed positions / (micro-batches × seq_len): 1.0 when every bin is full."""
    if not micro_batches:
        return 0.0
    return sum(m.positions for m in micro_batches) / (len(micro_batches) * seq_len)


__all__ = ["MicroBatch", "Sample", "distribute", "pack", "packing_efficiency", "samples_from_groups"]
