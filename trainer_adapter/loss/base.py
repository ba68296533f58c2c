"""What every policy loss shares: input checks, the KL penalty, the normalisation and the metrics.

A variant maps the token inputs to :class:`PolicyTerms` (its per-token term ℓ_t and the token
flags its metrics count); :func:`run_loss` does the rest, so normalisation, the KL penalty
and the metrics mean the same for every variant. The formulas are in :mod:`trainer_adapter.loss`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from trainer_adapter.loss.config import LossConfig, Normalization

MAX_LOG_RATIO = 20.0
"""Log-ratios are clamped here in the metrics and the KL term: a token with μ ≈ 0 must not turn a mean into
inf, and the k3 gradient grows like exp(ref − log π), so one token far below the reference would own the step."""


@dataclass
class TokenInputs:
    """A call's tokens as the variants read them, all ``[T]``."""

    trainer_logprobs: torch.Tensor
    """log π, carries the gradient."""
    log_ratio: torch.Tensor
    """log π − log μ (the gradient flows through log π only)."""
    advantages: torch.Tensor
    """The advantage of each token's sample, in log π's dtype."""
    loss_mask: torch.Tensor
    """bool, true on trainable tokens."""
    sample_ids: torch.Tensor
    """int, which sample each token belongs to (0..S−1)."""

    @property
    def num_samples(self) -> int:
        return int(self.sample_ids.max()) + 1 if self.sample_ids.numel() else 0

    @property
    def finite(self) -> torch.Tensor:
        """Trainable tokens whose log-ratio is a number (a NaN or ±inf logprob says nothing about the advantage)."""
        return self.loss_mask & torch.isfinite(self.log_ratio.detach())


@dataclass
class PolicyTerms:
    """What a variant computes: ``[T]`` ℓ_t (0 where the token does not train) and ``[T]`` bool metric flags."""

    per_token: torch.Tensor
    flags: dict[str, torch.Tensor]
    """Metric name → tokens it counts; reported as a fraction of the trainable tokens."""


TermsFn = Callable[[TokenInputs, LossConfig], PolicyTerms]


@dataclass
class LossOutput:
    """The scalar loss to backpropagate and detached per-call metrics."""

    loss: torch.Tensor
    metrics: dict[str, float]
    trainable_tokens: int
    """Tokens the metrics average over (to weight them when combining calls)."""


def run_loss(
    terms: TermsFn,
    trainer_logprobs: torch.Tensor,
    inference_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    loss_mask: torch.Tensor,
    sample_ids: torch.Tensor,
    config: LossConfig,
    normalizer: float | None = None,
    entropy: torch.Tensor | None = None,
    reference_logprobs: torch.Tensor | None = None,
) -> LossOutput:
    """The loss whose per-token terms ``terms`` computes; arguments as :func:`trainer_adapter.loss.policy_loss`."""
    tensors = [trainer_logprobs, inference_logprobs, advantages, loss_mask, sample_ids]
    if reference_logprobs is not None:
        tensors.append(reference_logprobs)
    shapes = {t.shape for t in tensors}
    if len(shapes) != 1 or trainer_logprobs.dim() != 1:
        raise ValueError(f"all inputs must be 1-D tensors of one length, got shapes {sorted(map(tuple, shapes))}")
    if config.kl_coef > 0 and reference_logprobs is None:
        raise ValueError("kl_coef > 0 needs reference_logprobs, the frozen reference model's token logprobs")
    loss_mask = loss_mask.bool()
    log_ratio = trainer_logprobs - inference_logprobs.to(trainer_logprobs.dtype)
    inputs = TokenInputs(trainer_logprobs, log_ratio, advantages.to(trainer_logprobs.dtype), loss_mask, sample_ids)
    out = terms(inputs, config)

    per_token = out.per_token
    kl = None
    if reference_logprobs is not None:
        kl = k3_to_reference(trainer_logprobs, reference_logprobs.to(trainer_logprobs.dtype))
        if config.kl_coef > 0:
            per_token = per_token + torch.where(loss_mask, config.kl_coef * kl, torch.zeros_like(kl))
    loss = normalize(per_token, inputs, config.normalization, normalizer)
    metrics = _metrics(log_ratio.detach(), loss_mask, out.flags, entropy, kl)
    return LossOutput(loss=loss, metrics=metrics, trainable_tokens=int(loss_mask.sum()))


def k3_to_reference(trainer_logprobs: torch.Tensor, reference_logprobs: torch.Tensor) -> torch.Tensor:
    """``[T]`` k3 = exp(d) − d − 1, d = ref − log π clamped to ±MAX_LOG_RATIO; the gradient flows through log π."""
    d = (reference_logprobs.detach() - trainer_logprobs).clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO)
    return torch.exp(d) - d - 1


def normalize(
    per_token: torch.Tensor, inputs: TokenInputs, mode: Normalization, normalizer: float | None
) -> torch.Tensor:
    """Σ ℓ / N (``token``) or Σ_i mean_i(ℓ) / S (``sequence``); ``normalizer`` is N or S, default this call's."""
    if mode == "token":
        total = per_token.sum()
        count = int(inputs.loss_mask.sum())
    else:
        zeros = per_token.new_zeros(inputs.num_samples)
        sums = zeros.index_add(0, inputs.sample_ids, per_token)
        tokens = zeros.index_add(0, inputs.sample_ids, inputs.loss_mask.to(per_token.dtype))
        total = (sums / tokens.clamp(min=1)).sum()  # a sample with no trainable token has a zero sum
        count = int((tokens > 0).sum())
    denominator = float(normalizer) if normalizer is not None else float(max(count, 1))
    if denominator <= 0:
        raise ValueError(f"normalizer must be positive, got {normalizer}")
    return total / denominator


def log_bound(value: float) -> float:
    """log of a ratio bound; a lower bound of 0 is −inf (nothing is below it)."""
    return math.log(value) if value > 0 else -math.inf


def _metrics(
    log_ratio: torch.Tensor,
    loss_mask: torch.Tensor,
    flags: dict[str, torch.Tensor],
    entropy: torch.Tensor | None,
    kl: torch.Tensor | None,
) -> dict[str, float]:
    if int(loss_mask.sum()) == 0:
        return {}

    def mean(values: torch.Tensor) -> float:
        return float(values[loss_mask].float().mean())

    clamped = torch.nan_to_num(log_ratio.clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO), nan=0.0)
    metrics = {"mismatch_kl": mean(torch.exp(clamped) - clamped - 1)}
    metrics.update({name: mean(flag) for name, flag in flags.items()})
    if entropy is not None:
        metrics["entropy"] = mean(entropy.detach())
    if kl is not None:
        metrics["ref_kl"] = mean(kl.detach())
    return metrics


__all__ = ["MAX_LOG_RATIO", "LossOutput", "PolicyTerms", "TermsFn", "TokenInputs", "k3_to_reference", "log_bound",
           "normalize", "run_loss"]
