"""``policy_loss``: the variant ``[loss] type`` names, run by the shared machinery of :mod:`.base` (the family's
formulas are in the package docstring, :mod:`trainer_adapter.loss`)."""

from __future__ import annotations

import torch

from trainer_adapter.loss.base import LossOutput, TermsFn, run_loss
from trainer_adapter.loss.cispo import cispo_terms
from trainer_adapter.loss.config import LossConfig, LossType
from trainer_adapter.loss.gspo import gspo_terms
from trainer_adapter.loss.icepop import icepop_terms
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


__all__ = ["policy_loss"]
