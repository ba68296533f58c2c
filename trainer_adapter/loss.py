"""The IcePop loss: masked token-level importance sampling for off-policy policy gradients.

Rollouts are sampled by the inference engine (policy μ: possibly older weights, and
always a different implementation), the gradient is taken for the trainer's policy π.
Per trainable token t of sample i, with advantage A_i::

    log r_t = log π(y_t) − log μ(y_t)                       (π after dividing logits by the temperature)
    keep_t  = loss_mask_t ∧ α ≤ r_t ≤ β ∧ ¬(∃ s ∈ i, loss_mask_s: r_s < ρ)
    L       = − Σ_i Σ_t keep_t · r_t · A_i  /  N

- Tokens whose ratio leaves [α, β] are *masked*, not clipped: they add no gradient at all,
  because a token the two policies disagree on that much says more about the mismatch than
  about the advantage (IcePop; defaults α = 0.5, β = 5 as in its paper).
- A sample with any trainable ratio below ρ (default 1e-5) is masked whole: one token the
  trainer finds near impossible means the sample is not one π would produce.
- N is the number of trainable tokens (masked ones included, so masking never inflates the
  weight of the rest). The caller passes N for the whole step, so accumulating gradients
  over micro-batches (and ranks) equals one big batch.
- The gradient on a kept token is −r_t · A_i · ∇ log π(y_t): REINFORCE weighted by the
  unclipped ratio. There is no reference model and no KL or entropy term.

Metrics (means over trainable tokens): ``mismatch_kl`` = mean(r − log r − 1), the k3
estimate of KL(μ ‖ π), ≈ 0 when trainer and inference agree; ``masked_low``, ``masked_high``,
``masked_sequence`` and ``masked`` (any reason) fractions; ``entropy`` when given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator

# Metrics clamp log-ratios here so a token with μ ≈ 0 cannot turn the mean into inf.
_MAX_METRIC_LOG_RATIO = 20.0


class LossConfig(BaseModel):
    """The IcePop mask: which tokens' importance ratios count."""

    model_config = ConfigDict(extra="forbid")

    mask_low: float = Field(0.5, gt=0, description="α: tokens with ratio π/μ below this are masked.")
    mask_high: float = Field(5.0, gt=0, description="β: tokens with ratio π/μ above this are masked.")
    sequence_mask_low: float = Field(
        1e-5, ge=0, description="ρ: a whole sample is masked when any of its ratios is below this (0 = off)."
    )

    @model_validator(mode="after")
    def _band_is_ordered(self) -> LossConfig:
        if not self.mask_low <= 1.0 <= self.mask_high:
            raise ValueError(f"need mask_low <= 1 <= mask_high, got [{self.mask_low}, {self.mask_high}]")
        return self


@dataclass
class LossOutput:
    """The scalar loss to backpropagate and detached per-call metrics."""

    loss: torch.Tensor
    metrics: dict[str, float]
    trainable_tokens: int
    """Tokens the metrics average over (to weight them when combining calls)."""


def icepop_loss(
    trainer_logprobs: torch.Tensor,
    inference_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    loss_mask: torch.Tensor,
    sample_ids: torch.Tensor,
    config: LossConfig,
    normalizer: float | None = None,
    entropy: torch.Tensor | None = None,
) -> LossOutput:
    """The IcePop loss over a flat run of tokens from one or more samples (see the module docstring).

    Args:
        trainer_logprobs: ``[T]`` log π of each token (carries the gradient).
        inference_logprobs: ``[T]`` log μ recorded by the inference server.
        advantages: ``[T]`` the advantage of the sample each token belongs to.
        loss_mask: ``[T]`` bool, true on trainable (model-sampled) tokens.
        sample_ids: ``[T]`` int, which sample each token belongs to (0..S−1).
        config: the mask band and the sequence threshold.
        normalizer: N, the trainable-token count the sum is divided by; default this call's count.
        entropy: ``[T]`` per-token entropy of π, for the metrics only.
    """
    shapes = {t.shape for t in (trainer_logprobs, inference_logprobs, advantages, loss_mask, sample_ids)}
    if len(shapes) != 1 or trainer_logprobs.dim() != 1:
        raise ValueError(f"all inputs must be 1-D tensors of one length, got shapes {sorted(map(tuple, shapes))}")
    loss_mask = loss_mask.bool()
    log_ratio = trainer_logprobs - inference_logprobs.to(trainer_logprobs.dtype)
    detached = log_ratio.detach()

    # NaN compares false everywhere, so a non-finite ratio is never kept.
    low = loss_mask & (detached < math.log(config.mask_low))
    high = loss_mask & (detached > math.log(config.mask_high))
    in_band = (detached >= math.log(config.mask_low)) & (detached <= math.log(config.mask_high))
    sequence_masked = _sequences_with_a_low_ratio(detached, loss_mask, sample_ids, config.sequence_mask_low)
    keep = loss_mask & in_band & ~sequence_masked

    # exp() only of kept tokens: an exp(+inf) elsewhere would turn the gradient into NaN.
    ratio = torch.exp(torch.where(keep, log_ratio, torch.zeros_like(log_ratio)))
    per_token = torch.where(keep, -ratio * advantages.to(ratio.dtype), torch.zeros_like(ratio))
    count = int(loss_mask.sum())
    denominator = float(normalizer) if normalizer is not None else float(max(count, 1))
    if denominator <= 0:
        raise ValueError(f"normalizer must be positive, got {normalizer}")
    loss = per_token.sum() / denominator

    metrics = _metrics(detached, loss_mask, low, high, sequence_masked, keep, entropy)
    return LossOutput(loss=loss, metrics=metrics, trainable_tokens=count)


def _sequences_with_a_low_ratio(
    log_ratio: torch.Tensor, loss_mask: torch.Tensor, sample_ids: torch.Tensor, threshold: float
) -> torch.Tensor:
    """``[T]`` bool: the token's sample has a trainable token with ratio below ``threshold``."""
    if threshold <= 0 or log_ratio.numel() == 0:
        return torch.zeros_like(loss_mask)
    too_low = loss_mask & (log_ratio < math.log(threshold))
    bad_samples = torch.zeros(int(sample_ids.max()) + 1, dtype=torch.bool, device=log_ratio.device)
    bad_samples[sample_ids[too_low]] = True
    return bad_samples[sample_ids]


def _metrics(
    log_ratio: torch.Tensor,
    loss_mask: torch.Tensor,
    low: torch.Tensor,
    high: torch.Tensor,
    sequence_masked: torch.Tensor,
    keep: torch.Tensor,
    entropy: torch.Tensor | None,
) -> dict[str, float]:
    count = int(loss_mask.sum())
    if count == 0:
        return {}

    def mean(values: torch.Tensor) -> float:
        return float(values[loss_mask].float().mean())

    clamped = log_ratio.clamp(-_MAX_METRIC_LOG_RATIO, _MAX_METRIC_LOG_RATIO)
    clamped = torch.nan_to_num(clamped, nan=0.0)
    metrics = {
        "mismatch_kl": mean(torch.exp(clamped) - clamped - 1),
        "masked_low": mean(low),
        "masked_high": mean(high),
        "masked_sequence": mean(sequence_masked),
        "masked": mean(~keep),
    }
    if entropy is not None:
        metrics["entropy"] = mean(entropy.detach())
    return metrics


__all__ = ["LossConfig", "LossOutput", "icepop_loss"]
