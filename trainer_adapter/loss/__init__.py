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

import importlib
from typing import TYPE_CHECKING, Any

from trainer_adapter.loss.config import LossConfig, LossType, Normalization

if TYPE_CHECKING:
    from trainer_adapter.loss.base import LossOutput
    from trainer_adapter.loss.icepop import icepop_loss
    from trainer_adapter.loss.policy import policy_loss

# The torch half loads on first use: a config (``vf-train``'s options, a run's validation) needs LossConfig only.
_LAZY = {"policy_loss": "trainer_adapter.loss.policy", "icepop_loss": "trainer_adapter.loss.icepop",
         "LossOutput": "trainer_adapter.loss.base"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["LossConfig", "LossOutput", "LossType", "Normalization", "icepop_loss", "policy_loss"]
