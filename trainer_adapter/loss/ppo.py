"""``type = "ppo"``: the clipped surrogate per token, with INTELLECT-2's bound δ for negative advantages.

Per trainable token t of sample i, with ε_l, ε_h, δ = ``ppo_clip_low``, ``ppo_clip_high``, ``delta``
(defaults 0.2, 0.28 — DAPO's clip-higher — and 4)::

    A_i ≥ 0:  ℓ_t = −min(r_t·A_i, clip(r_t, 1−ε_l, 1+ε_h)·A_i)             = −A_i · min(r_t, 1+ε_h)
    A_i < 0:  ℓ_t = −max(min(r_t·A_i, clip(r_t, 1−ε_l, 1+ε_h)·A_i), δ·A_i)  = −A_i · clamp(r_t, 1−ε_l, δ)

PPO's min alone leaves a negative-advantage token with r_t ≫ 1 unclipped (its weight is r_t,
unbounded); capping that weight at δ is the second side of INTELLECT-2's two-sided clip.
So ℓ_t = −A_i · w_t, and the gradient is ∇ℓ_t = −A_i · r_t · ∇log π_t while r_t lies in the
range that keeps one (A ≥ 0: r ≤ 1+ε_h; A < 0: 1−ε_l ≤ r ≤ δ), else 0 (w_t is then the bound,
a constant). A ratio exactly on a bound keeps its gradient, as IcePop keeps its band edges.
A token with a non-finite ratio adds nothing.

Metrics: ``clipped`` (ratio beyond its bound, so no gradient) and ``masked`` (no gradient: clipped or non-finite).
"""

from __future__ import annotations

import torch

from trainer_adapter.loss.base import PolicyTerms, TokenInputs, log_bound
from trainer_adapter.loss.config import LossConfig


def ppo_terms(inputs: TokenInputs, config: LossConfig) -> PolicyTerms:
    """ℓ_t and the clip flags (see the module docstring)."""
    usable = inputs.finite
    per_token, clipped = clipped_surrogate(
        inputs.log_ratio, inputs.advantages, usable, 1 - config.ppo_clip_low, 1 + config.ppo_clip_high, config.delta
    )
    return PolicyTerms(per_token, {"clipped": clipped, "masked": inputs.loss_mask & (clipped | ~usable)})


def clipped_surrogate(
    log_ratio: torch.Tensor, advantages: torch.Tensor, usable: torch.Tensor, low: float, high: float, delta: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """``([T] ℓ, [T] bool clipped)``: ℓ = −A · w(r), w = min(r, high) if A ≥ 0 and clamp(r, low, delta) if A < 0.

    ``w`` is r itself (with its gradient) inside the range, the bound (a constant) outside;
    tokens not ``usable`` get ℓ = 0. Comparisons are on log r, edges inside.
    """
    detached = log_ratio.detach()
    positive = advantages >= 0
    above = torch.where(positive, detached > log_bound(high), detached > log_bound(delta))
    below = ~positive & (detached < log_bound(low))
    active = usable & ~above & ~below
    # exp() only where the ratio keeps its gradient: a huge ratio elsewhere would overflow to inf and its
    # (zero) gradient to NaN.
    ratio = torch.exp(torch.where(active, log_ratio, torch.zeros_like(log_ratio)))
    upper = torch.where(positive, detached.new_tensor(high), detached.new_tensor(delta))
    bound = torch.where(above, upper, detached.new_tensor(low))
    weight = torch.where(active, ratio, bound)
    per_token = torch.where(usable, -advantages * weight, torch.zeros_like(weight))
    return per_token, usable & (above | below)


__all__ = ["clipped_surrogate", "ppo_terms"]
