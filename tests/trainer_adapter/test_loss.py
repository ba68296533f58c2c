"""The IcePop loss against hand-computed values, including every masking edge."""

from __future__ import annotations

import math

import pytest
import torch
from pydantic import ValidationError

from trainer_adapter.loss import LossConfig, icepop_loss

LN = math.log


def _loss(trainer, inference, adv, mask, ids, config=None, **kwargs):
    trainer = torch.tensor(trainer, dtype=torch.float64, requires_grad=True)
    out = icepop_loss(
        trainer,
        torch.tensor(inference, dtype=torch.float64),
        torch.tensor(adv, dtype=torch.float64),
        torch.tensor(mask, dtype=torch.bool),
        torch.tensor(ids),
        config or LossConfig(),
        **kwargs,
    )
    out.loss.backward()
    return out, trainer.grad


def test_on_policy_tokens_give_minus_mean_advantage_and_zero_kl() -> None:
    # r = 1 everywhere: L = -(2·1 + 1·(-1) ) / 3 trainable tokens (the prompt token is not trainable).
    out, grad = _loss([-1.0, -2.0, -0.5, -0.7], [-1.0, -2.0, -0.5, -0.7], [2.0, 2.0, -1.0, -1.0],
                      [False, True, True, True], [0, 0, 1, 1])
    assert out.loss.item() == pytest.approx(-(2.0 - 1.0 - 1.0) / 3)
    assert out.metrics["mismatch_kl"] == pytest.approx(0.0)
    assert out.metrics["masked"] == 0.0
    assert out.trainable_tokens == 3
    # dL/dlogπ_t = -r_t·A/N on kept tokens, 0 on the prompt token.
    assert grad.tolist() == pytest.approx([0.0, -2 / 3, 1 / 3, 1 / 3])


def test_ratio_weights_the_advantage_and_kl_is_k3() -> None:
    # r = 2 and r = 0.8 on two tokens of one sample with A = 1.5.
    out, grad = _loss([LN(2.0), LN(0.8)], [0.0, 0.0], [1.5, 1.5], [True, True], [0, 0])
    assert out.loss.item() == pytest.approx(-(2.0 * 1.5 + 0.8 * 1.5) / 2)
    k3 = ((2 - LN(2) - 1) + (0.8 - LN(0.8) - 1)) / 2
    assert out.metrics["mismatch_kl"] == pytest.approx(k3)
    assert grad.tolist() == pytest.approx([-2.0 * 1.5 / 2, -0.8 * 1.5 / 2])


def test_band_edges_are_kept_and_tokens_just_outside_are_masked_not_clipped() -> None:
    eps = 1e-9
    ratios = [0.5, 5.0, 0.5 - eps, 5.0 + eps, 1.0]
    out, grad = _loss([LN(r) for r in ratios], [0.0] * 5, [1.0] * 5, [True] * 5, [0, 1, 2, 3, 4],
                      LossConfig(sequence_mask_low=0.0))
    # Kept: 0.5, 5.0 and 1.0; masked ones add nothing (a clip would have added 0.5 and 5.0).
    assert out.loss.item() == pytest.approx(-(0.5 + 5.0 + 1.0) / 5)
    assert grad.tolist() == pytest.approx([-0.5 / 5, -5.0 / 5, 0.0, 0.0, -1.0 / 5])
    assert out.metrics["masked_low"] == pytest.approx(1 / 5)
    assert out.metrics["masked_high"] == pytest.approx(1 / 5)
    assert out.metrics["masked"] == pytest.approx(2 / 5)


def test_masked_tokens_still_count_in_the_denominator() -> None:
    out, _ = _loss([0.0, LN(10.0)], [0.0, 0.0], [1.0, 1.0], [True, True], [0, 0])
    assert out.loss.item() == pytest.approx(-1.0 / 2)


def test_one_ratio_below_the_sequence_threshold_masks_its_whole_sample_only() -> None:
    # Sample 0: ratios 1, 1, 1e-6 (the last already masked low) -> all three masked.
    # Sample 1: ratio 1 with A = -1 -> kept.
    trainer = [0.0, 0.0, LN(1e-6), 0.0]
    out, grad = _loss(trainer, [0.0] * 4, [1.0, 1.0, 1.0, -1.0], [True] * 4, [0, 0, 0, 1])
    assert out.loss.item() == pytest.approx(1.0 / 4)
    assert grad.tolist() == pytest.approx([0.0, 0.0, 0.0, 1 / 4])
    assert out.metrics["masked_sequence"] == pytest.approx(3 / 4)
    assert out.metrics["masked_low"] == pytest.approx(1 / 4)
    assert out.metrics["masked"] == pytest.approx(3 / 4)


def test_sequence_threshold_edge_and_untrainable_tokens() -> None:
    # Exactly 1e-5 is not below the threshold (and is masked low only); a tiny ratio on a prompt
    # token (mask 0) never masks its sample.
    cfg = LossConfig(mask_low=1e-6)
    out, _ = _loss([LN(1e-5), 0.0], [0.0, 0.0], [1.0, 1.0], [True, True], [0, 0], cfg)
    assert out.metrics["masked_sequence"] == 0.0
    assert out.loss.item() == pytest.approx(-(1e-5 + 1.0) / 2)
    out, _ = _loss([LN(1e-9), 0.0], [0.0, 0.0], [1.0, 1.0], [False, True], [0, 0])
    assert out.metrics["masked_sequence"] == 0.0
    assert out.loss.item() == pytest.approx(-1.0)


def test_sequence_mask_can_be_turned_off() -> None:
    out, _ = _loss([LN(1e-6), 0.0], [0.0, 0.0], [1.0, 1.0], [True, True], [0, 0],
                   LossConfig(sequence_mask_low=0.0))
    assert out.loss.item() == pytest.approx(-1.0 / 2)
    assert out.metrics["masked_sequence"] == 0.0


def test_non_finite_inference_logprob_is_masked_and_gradient_stays_finite() -> None:
    out, grad = _loss([-1.0, -1.0], [float("-inf"), -1.0], [1.0, 1.0], [True, True], [0, 1])
    assert out.metrics["masked_high"] == pytest.approx(0.5)
    assert out.loss.item() == pytest.approx(-0.5)
    assert torch.isfinite(grad).all()
    assert math.isfinite(out.metrics["mismatch_kl"])


def test_normalizer_and_entropy() -> None:
    out, _ = _loss([0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [True, True], [0, 0], normalizer=8,
                   entropy=torch.tensor([0.2, 0.4]))
    assert out.loss.item() == pytest.approx(-2 / 8)
    assert out.metrics["entropy"] == pytest.approx(0.3)


def test_float32_band_edge_is_kept() -> None:
    inference = torch.tensor([-1.25, -3.0])
    trainer = inference + torch.tensor([LN(0.5), LN(5.0)])
    out = icepop_loss(trainer, inference, torch.ones(2), torch.ones(2, dtype=torch.bool), torch.tensor([0, 0]),
                      LossConfig())
    assert out.metrics["masked"] <= 0.5  # rounding may move one edge by an ulp, never both


def test_no_trainable_tokens_gives_zero_loss_and_no_metrics() -> None:
    out, grad = _loss([-1.0], [-1.0], [1.0], [False], [0])
    assert out.loss.item() == 0.0 and out.metrics == {} and grad.tolist() == [0.0]


@pytest.mark.parametrize("kwargs", [{"mask_low": 2.0}, {"mask_high": 0.9}, {"mask_low": 0}, {"bogus": 1}])
def test_bad_config_is_rejected(kwargs: dict) -> None:
    with pytest.raises(ValidationError):
        LossConfig(**kwargs)


def test_mismatched_shapes_are_rejected() -> None:
    with pytest.raises(ValueError, match="1-D tensors of one length"):
        icepop_loss(torch.zeros(3), torch.zeros(2), torch.zeros(3), torch.ones(3, dtype=torch.bool),
                    torch.zeros(3, dtype=torch.long), LossConfig())
