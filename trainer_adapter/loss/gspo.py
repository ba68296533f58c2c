"""``type = "gspo"``: PPO's clip on the sample's ratio instead of the token's (GSPO).

Per sample i with n_i trainable tokens, the sequence ratio is the geometric mean of its token ratios::

    s_i = exp( (1/n_i) · Σ_t log r_t )

and each trainable token uses the GSPO paper's token form, whose value is s_i and whose
gradient flows through that token alone (sg = stop-gradient)::

    s_i,t = sg(s_i) · π_t / sg(π_t)           value s_i,  ∇s_i,t = s_i · ∇log π_t
    ℓ_t   = −A_i · w(s_i,t)                   w as in ppo: min(s, 1+ε_h) if A ≥ 0, clamp(s, 1−ε_l, δ) if A < 0

with ε_l, ε_h = ``gspo_clip_low``, ``gspo_clip_high`` (defaults 3e-4 and 4e-4: a mean of
log-ratios moves far less than one token's, so the band is much narrower than PPO's) and
the shared ``delta`` (not in the GSPO paper; it bounds a negative-advantage sample the
trainer now finds far likelier, as in ppo). Clipping is decided per sample, so a sample
either trains on all its tokens or on none. With ``normalization = "sequence"`` the loss is the
paper's sequence-level objective exactly (the gradient of −A_i·s_i is −A_i·s_i·mean_t ∇log π_t);
with ``"token"`` each sample weighs as many tokens as it has.

A sample with a non-finite token ratio has no defined s_i and is dropped whole.

Metrics: ``clipped`` (tokens of samples whose s_i is beyond its bound), ``masked_sequence``
(tokens of samples dropped for a non-finite ratio) and ``masked`` (no gradient, either reason).
"""

from __future__ import annotations

import torch

from trainer_adapter.loss.base import PolicyTerms, TokenInputs
from trainer_adapter.loss.config import LossConfig
from trainer_adapter.loss.ppo import clipped_surrogate


def gspo_terms(inputs: TokenInputs, config: LossConfig) -> PolicyTerms:
    """ℓ_t and the clip flags (see the module docstring)."""
    loss_mask, ids, detached = inputs.loss_mask, inputs.sample_ids, inputs.log_ratio.detach()
    broken = torch.zeros(inputs.num_samples, dtype=torch.bool, device=ids.device)
    broken[ids[loss_mask & ~inputs.finite]] = True
    usable = loss_mask & ~broken[ids]

    zeros = detached.new_zeros(inputs.num_samples)
    sums = zeros.index_add(0, ids, torch.where(usable, detached, torch.zeros_like(detached)))
    counts = zeros.index_add(0, ids, usable.to(detached.dtype))
    sequence_log_ratio = (sums / counts.clamp(min=1))[ids]
    # Value log s_i, gradient that of log π_t: the token form of s_i,t.
    token_log_ratio = sequence_log_ratio + (inputs.log_ratio - detached)
    per_token, clipped = clipped_surrogate(
        token_log_ratio, inputs.advantages, usable, 1 - config.gspo_clip_low, 1 + config.gspo_clip_high, config.delta
    )
    flags = {"clipped": clipped, "masked_sequence": loss_mask & ~usable, "masked": loss_mask & (clipped | ~usable)}
    return PolicyTerms(per_token, flags)


__all__ = ["gspo_terms"]
