"""``type = "icepop"``: masked token-level importance sampling (the default).

Per trainable token t of sample i::

    keep_t = α ≤ r_t ≤ β  ∧  ¬(∃ trainable s ∈ i: r_s < ρ)
    ℓ_t    = −keep_t · r_t · A_i                        ∇ℓ_t = −keep_t · r_t · A_i · ∇log π_t

- Tokens whose ratio leaves [α, β] (``mask_low``, ``mask_high``; defaults 0.5 and 5 as in the
  IcePop paper; the edges are kept) are *masked*, not clipped: they add no gradient at all,
  because a token the two policies disagree on that much says more about the mismatch than
  about the advantage.
- A sample with any trainable ratio below ρ (``sequence_mask_low``, default 1e-5; 0 = off) is
  masked whole: one token the trainer finds near impossible means the sample is not one π would produce.
- A kept token's gradient is REINFORCE weighted by its unclipped ratio. A NaN ratio is never kept;
  an infinite one is masked high.

Metrics: ``masked_low``, ``masked_high`` (outside the band), ``masked_sequence`` (in a sample
masked whole) and ``masked`` (any reason).
"""

from __future__ import annotations

import math

import torch

from trainer_adapter.loss.base import LossOutput, PolicyTerms, TokenInputs, run_loss
from trainer_adapter.loss.config import LossConfig


def icepop_terms(inputs: TokenInputs, config: LossConfig) -> PolicyTerms:
    """ℓ_t and the mask flags (see the module docstring)."""
    loss_mask, detached = inputs.loss_mask, inputs.log_ratio.detach()
    # NaN compares false everywhere, so a non-finite ratio is never kept.
    low = loss_mask & (detached < math.log(config.mask_low))
    high = loss_mask & (detached > math.log(config.mask_high))
    in_band = (detached >= math.log(config.mask_low)) & (detached <= math.log(config.mask_high))
    sequence_masked = _sequences_with_a_low_ratio(detached, loss_mask, inputs.sample_ids, config.sequence_mask_low)
    keep = loss_mask & in_band & ~sequence_masked

    # exp() only of kept tokens: an exp(+inf) elsewhere would turn the gradient into NaN.
    ratio = torch.exp(torch.where(keep, inputs.log_ratio, torch.zeros_like(inputs.log_ratio)))
    per_token = torch.where(keep, -ratio * inputs.advantages, torch.zeros_like(ratio))
    flags = {"masked_low": low, "masked_high": high, "masked_sequence": sequence_masked, "masked": ~keep}
    return PolicyTerms(per_token, flags)


def icepop_loss(
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
    """The IcePop loss whatever ``config.type`` says; arguments as :func:`trainer_adapter.loss.policy_loss`."""
    return run_loss(icepop_terms, trainer_logprobs, inference_logprobs, advantages, loss_mask, sample_ids, config,
                    normalizer, entropy, reference_logprobs)


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


__all__ = ["icepop_loss", "icepop_terms"]
