"""Tampering workers: one per cheat the validator must catch (tests and bench/toploc.py run them).

Each is an :class:`~trainer_adapter.validate.workers.HonestWorker` with one thing changed, and each cheats as
well as it can: what it does not need to fake (rewards, advantages, the assigned prompts) it keeps
consistent, so that only the check meant for the cheat stands between it and the trainer.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal

import torch
from transformers import PreTrainedModel

from trainer_adapter.validate.batch import SubmittedBatch, SubmittedRollout
from trainer_adapter.validate.workers import HonestWorker, sample, submitted_rollout, with_rewards

Cheat = Literal[
    "edited_tokens", "other_weights", "quantised", "smaller_model", "early_eos", "cherry_picked", "reward_range",
]  # fmt: skip
CHEATS: tuple[Cheat, ...] = (
    "edited_tokens", "other_weights", "quantised", "smaller_model", "early_eos", "cherry_picked", "reward_range",
)  # fmt: skip


def perturbed(model: PreTrainedModel, seed: int, scale: float) -> PreTrainedModel:
    """A copy of ``model`` with every weight moved by ``scale`` times its own spread of seeded noise."""
    other = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in other.parameters():
            spread = max(float(param.std()) if param.numel() > 1 else 0.0, 1e-2)
            param.add_(torch.randn(param.shape, generator=generator) * scale * spread)
    return other


def quantised(model: PreTrainedModel, bits: int = 8) -> PreTrainedModel:
    """A copy of ``model`` whose matrices are rounded to ``bits``-bit integers per row (symmetric), as a worker
    serving a quantised checkpoint computes with; vectors (norms) stay as they are."""
    other = copy.deepcopy(model)
    top = 2 ** (bits - 1) - 1
    with torch.no_grad():
        for param in other.parameters():
            if param.dim() == 2:
                step = param.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / top
                param.copy_((param / step).round().clamp(-top, top) * step)
    return other


@dataclass
class EditedTokens(HonestWorker):
    """Generates honestly, then swaps tokens in the middle of each completion (commitment and logprobs kept)."""

    edits: int = 2

    def generate(self, problem: int, generator: torch.Generator) -> SubmittedRollout:
        rollout = super().generate(problem, generator)
        ids = list(rollout.completion_ids)
        for _ in range(self.edits):
            at = int(torch.randint(0, max(len(ids) - 1, 1), (1,), generator=generator))
            ids[at] = (ids[at] + 1 + int(torch.randint(0, 200, (1,), generator=generator))) % 256
        return rollout.model_copy(update={"completion_ids": ids})


@dataclass
class OtherModel(HonestWorker):
    """Generates, commits and reports logprobs with ``other`` (other weights, or a quantised copy)."""

    other: PreTrainedModel | None = None

    def generate(self, problem: int, generator: torch.Generator) -> SubmittedRollout:
        assert self.other is not None
        prompt = self.prompts[problem]
        generated = sample(self.other, prompt, self.sampling, self.eos_id, generator)
        return submitted_rollout(self.other, problem, prompt, generated, self.sampling)


@dataclass
class SmallerModel(HonestWorker):
    """Samples with a cheaper ``small`` model, then prefills the tokens with the right model so that the
    commitment and the logprobs are the right model's (INTELLECT-2's case for the sampling check)."""

    small: PreTrainedModel | None = None

    def generate(self, problem: int, generator: torch.Generator) -> SubmittedRollout:
        assert self.small is not None
        prompt = self.prompts[problem]
        generated = sample(self.small, prompt, self.sampling, self.eos_id, generator)
        with torch.no_grad():
            ids = torch.tensor([prompt + generated.completion_ids[:-1]])
            generated.hidden = self.model.model(input_ids=ids).last_hidden_state[0, len(prompt) - 1 :].float()
        return submitted_rollout(self.model, problem, prompt, generated, self.sampling)


@dataclass
class EarlyEos(HonestWorker):
    """Ends every rollout with EOS in its first half (cheaper rollouts), everything else honest."""

    def generate(self, problem: int, generator: torch.Generator) -> SubmittedRollout:
        prompt = self.prompts[problem]
        at = int(torch.randint(1, self.sampling.max_tokens // 2, (1,), generator=generator))
        generated = sample(self.model, prompt, self.sampling, self.eos_id, generator, eos_at=at)
        return submitted_rollout(self.model, problem, prompt, generated, self.sampling)


@dataclass
class CherryPicked(HonestWorker):
    """Rolls out ``extra`` unassigned problems too and submits the best of them in place of its worst group."""

    extra: int = 2
    dataset_size: int = 0

    def batch(self, step: int, problems: Sequence[int], rollouts_per_problem: int, seed: int) -> SubmittedBatch:
        honest = super().batch(step, problems, rollouts_per_problem, seed)
        spare = [p for p in range(self.dataset_size) if p not in problems][: self.extra]
        generator = torch.Generator().manual_seed(seed + 1)
        extra = with_rewards(
            [self.generate(p, generator) for p in spare for _ in range(rollouts_per_problem)], self.reward
        )
        groups: dict[int, list[SubmittedRollout]] = {}
        for r in [*honest.rollouts, *extra]:
            groups.setdefault(r.problem, []).append(r)
        total = {p: sum(r.reward for r in group) for p, group in groups.items()}
        worst = min(problems, key=total.__getitem__)
        best = max(spare, key=total.__getitem__)  # swapped in even if no better: the act is what is checked
        kept = [best if p == worst else p for p in problems]
        return honest.model_copy(update={"rollouts": [r for p in kept for r in groups[p]]})


@dataclass
class RewardRange(HonestWorker):
    """Inflates every reward by ``bonus`` (advantages, relative to the group, stay consistent)."""

    bonus: float = 1.0

    def batch(self, step: int, problems: Sequence[int], rollouts_per_problem: int, seed: int) -> SubmittedBatch:
        honest = super().batch(step, problems, rollouts_per_problem, seed)
        inflated = [r.model_copy(update={"reward": r.reward + self.bonus}) for r in honest.rollouts]
        return honest.model_copy(update={"rollouts": inflated})


@dataclass
class CheatModels:
    """The models the model-swapping cheats use, built once from the right one."""

    other: PreTrainedModel
    quantised: PreTrainedModel
    small: PreTrainedModel


def cheater(cheat: Cheat, honest: HonestWorker, models: CheatModels, dataset_size: int) -> HonestWorker:
    """A worker like ``honest`` (same name, prompts and sampling) that commits ``cheat``."""
    base: dict[str, Any] = {f.name: getattr(honest, f.name) for f in fields(HonestWorker)}
    match cheat:
        case "edited_tokens":
            return EditedTokens(**base)
        case "other_weights":
            return OtherModel(**base, other=models.other)
        case "quantised":
            return OtherModel(**base, other=models.quantised)
        case "smaller_model":
            return SmallerModel(**base, small=models.small)
        case "early_eos":
            return EarlyEos(**base)
        case "cherry_picked":
            return CherryPicked(**base, dataset_size=dataset_size)
        case "reward_range":
            return RewardRange(**base)


__all__ = [
    "CHEATS", "Cheat", "CheatModels", "CherryPicked", "EarlyEos", "EditedTokens", "OtherModel", "RewardRange",
    "SmallerModel", "cheater", "perturbed", "quantised",
]  # fmt: skip
