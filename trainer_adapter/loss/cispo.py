"""``type = "cispo"``: REINFORCE with a clipped, stop-gradient importance weight (MiniMax-M1's CISPO).

Per trainable token t of sample i (sg = stop-gradient)::

    w_t = sg(clip(r_t, 1−ε_l, 1+ε_h))
    ℓ_t = −w_t · A_i · log π_t                 ∇ℓ_t = −w_t · A_i · ∇log π_t

PPO drops the gradient of a token whose ratio leaves the band; CISPO only bounds the weight,
so every token keeps a gradient, including the rare ones whose probability the trainer has
just raised (the tokens PPO's clip silences). ε_l, ε_h = ``cispo_clip_low``, ``cispo_clip_high``:
MiniMax-M1 leaves the lower bound off and tunes only the upper one, so the defaults are
ε_l = 1 (bound 0: none, r > 0) and ε_h = 4 (weight ≤ 5, IcePop's ceiling). The value of ℓ
is a surrogate (it carries log π's scale); only its gradient means anything.
A token with a non-finite ratio adds nothing.

Metrics: ``clipped`` (weight at a bound, the token still trains) and ``masked`` (non-finite ratio, no gradient).
"""

from __future__ import annotations

import torch

from trainer_adapter.loss.base import PolicyTerms, TokenInputs, log_bound
from trainer_adapter.loss.config import LossConfig


def cispo_terms(inputs: TokenInputs, config: LossConfig) -> PolicyTerms:
    """ℓ_t and the clip flags (see the module docstring)."""
    usable, detached = inputs.finite, inputs.log_ratio.detach()
    low, high = 1 - config.cispo_clip_low, 1 + config.cispo_clip_high
    # A large finite log-ratio may overflow exp() to inf; the clamp brings it back to the bound.
    weight = torch.exp(torch.where(usable, detached, torch.zeros_like(detached))).clamp(low, high)
    per_token = torch.where(usable, -weight * inputs.advantages * inputs.trainer_logprobs, torch.zeros_like(weight))
    clipped = usable & ((detached > log_bound(high)) | (detached < log_bound(low)))
    return PolicyTerms(per_token, {"clipped": clipped, "masked": inputs.loss_mask & ~usable})


__all__ = ["cispo_terms"]
