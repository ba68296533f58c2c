"""The RL policy losses: one family, chosen by ``[loss] type``, sharing normalisation, KL penalty and metrics.

Rollouts are sampled by the inference engine (policy μ: possibly older weights, and always
a different implementation); the gradient is taken for the trainer's policy π. Per
trainable token t of sample i, with A_i the sample's advantage (sg = stop-gradient)::

    log r_t = log π(y_t) − log μ(y_t)            (π after dividing the logits by the sampling temperature)

    icepop  ℓ_t = −keep_t · r_t · A_i                  r outside [α, β] masks the token (the default)
    ppo     ℓ_t = −A_i · w(r_t)                        w = min(r, 1+ε_h) if A ≥ 0, clamp(r, 1−ε_l, δ) if A < 0
    gspo    ℓ_t = −A_i · w(sg(s_i) · π_t / sg(π_t))    s_i = exp(mean_t log r_t), its own ε
    cispo   ℓ_t = −sg(clip(r_t, 1−ε_l, 1+ε_h)) · A_i · log π_t

Each variant's module (:mod:`.icepop`, :mod:`.ppo`, :mod:`.gspo`, :mod:`.cispo`) states its
formula, gradient, edges and defaults. With ``kl_coef`` = c > 0 every trainable token also gets
a penalty towards the frozen initial model (ref), the k3 estimator of KL(π ‖ ref), ≥ 0 and 0
where π = ref (the tokens come from μ ≈ π; there is no importance correction for the gap)::

    ℓ_t += c · (exp(ref_t − log π_t) − (ref_t − log π_t) − 1)

``normalization`` turns the ℓ_t into the loss::

    token      L = Σ_i Σ_t ℓ_t / N          N = trainable tokens of the whole step (DAPO-style)
    sequence   L = Σ_i (Σ_t ℓ_t / n_i) / S  n_i = sample i's trainable tokens, S = the step's samples with n_i > 0

Masked, clipped and dropped tokens (and samples) still count in N, n_i and S, so leaving some
out never inflates the weight of the rest. The caller passes N (or S) for the whole step, over
every micro-batch and rank, so the gradients accumulated over the calls are those of one call
on the whole batch; a sample must lie within one call (the packer never splits one).
Non-trainable tokens add nothing, and a call without any gives L = 0. A NaN or infinite
inference logprob never makes a gradient NaN: each variant drops such a token (gspo: its sample).

Metrics are means over trainable tokens: ``mismatch_kl`` = mean(r − log r − 1), the k3
estimate of KL(μ ‖ π), ≈ 0 when trainer and inference agree (log r clamped to ±20); the
variant's token fractions (icepop: ``masked_low``, ``masked_high``, ``masked_sequence``;
ppo and gspo: ``clipped``, gspo also ``masked_sequence``; cispo: ``clipped``), and for every
variant ``masked``, the fraction that gets no policy gradient; ``entropy`` when given;
``ref_kl`` = mean k3 to the reference when reference logprobs are given.
"""

from __future__ import annotations

import torch

from trainer_adapter.loss.base import LossOutput, TermsFn, run_loss
from trainer_adapter.loss.cispo import cispo_terms
from trainer_adapter.loss.config import LossConfig, LossType, Normalization
from trainer_adapter.loss.gspo import gspo_terms
from trainer_adapter.loss.icepop import icepop_loss, icepop_terms
from trainer_adapter.loss.ppo import ppo_terms

_TERMS: dict[LossType, TermsFn] = {"icepop": icepop_terms, "ppo": ppo_terms, "gspo": gspo_terms, "cispo": cispo_terms}


def policy_loss(
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
    """The loss ``config.type`` names over a flat run of tokens from one or more samples (see the module docstring).

    Args:
        trainer_logprobs: ``[T]`` log π of each token (carries the gradient).
        inference_logprobs: ``[T]`` log μ recorded by the inference server.
        advantages: ``[T]`` the advantage of the sample each token belongs to.
        loss_mask: ``[T]`` bool, true on trainable (model-sampled) tokens.
        sample_ids: ``[T]`` int, which sample each token belongs to (0..S−1).
        config: the variant, its bounds, the normalisation and ``kl_coef``.
        normalizer: N (token) or S (sequence) for the whole step; default this call's own.
        entropy: ``[T]`` per-token entropy of π, for the metrics only.
        reference_logprobs: ``[T]`` log-probabilities of the frozen reference model (no gradient);
            required when ``kl_coef > 0``, and reported as ``ref_kl`` whenever given.
    """
    return run_loss(_TERMS[config.type], trainer_logprobs, inference_logprobs, advantages, loss_mask, sample_ids,
                    config, normalizer, entropy, reference_logprobs)


__all__ = ["LossConfig", "LossOutput", "LossType", "Normalization", "icepop_loss", "policy_loss"]
