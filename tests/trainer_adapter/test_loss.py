"""The policy-loss family against hand-computed values: every variant, both normalisations, and their edges.

Each variant's values are worked out by hand on 1-6 tokens (ratios chosen so the arithmetic is
short), its gradient is checked against the papers' literal formulas through autograd, and the
shared machinery (normalisation, accumulation over calls, KL penalty, non-finite inputs, config
validation) is checked once per variant.
"""

from __future__ import annotations

import math

import pytest
import torch
from pydantic import ValidationError

from trainer_adapter.loss import LossConfig, icepop_loss, policy_loss

LN = math.log
TYPES = ("icepop", "ppo", "gspo", "cispo")


def _loss(trainer, inference, adv, mask, ids, config=None, **kwargs):
    """``policy_loss`` on float64 lists; returns the output and d loss / d log π."""
    trainer = torch.tensor(trainer, dtype=torch.float64, requires_grad=True)
    out = policy_loss(
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


def test_icepop_loss_is_icepop_whatever_the_type_and_the_default_type() -> None:
    args = ([LN(2.0), LN(0.1)], [0.0, 0.0], [1.0, 1.0], [True, True], [0, 0])
    default, _ = _loss(*args)
    trainer = torch.tensor(args[0], dtype=torch.float64)
    forced = icepop_loss(trainer, *(torch.tensor(a) for a in args[1:4]), torch.tensor(args[4]),
                         LossConfig(type="ppo"))
    assert default.loss.item() == forced.loss.item() == pytest.approx(-2.0 / 2)
    assert set(default.metrics) == {"mismatch_kl", "masked_low", "masked_high", "masked_sequence", "masked"}


# --- ppo -------------------------------------------------------------------------------------------------------


def test_ppo_clips_each_side_by_the_sign_of_the_advantage() -> None:
    # Defaults ε_low = 0.2, ε_high = 0.28, δ = 4. One token per sample, N = 6.
    #   A = +1: r = 1.1 inside -> -1.1; r = 1.5 > 1.28 -> -1.28 (clipped); r = 0.5 -> -0.5 (min keeps r·A)
    #   A = -1: r = 0.5 < 0.8 -> 0.8 (clipped); r = 2 <= δ -> 2 (min keeps r·A); r = 5 > δ -> 4 (clipped)
    ratios, adv = [1.1, 1.5, 0.5, 0.5, 2.0, 5.0], [1.0, 1.0, 1.0, -1.0, -1.0, -1.0]
    out, grad = _loss([LN(r) for r in ratios], [0.0] * 6, adv, [True] * 6, list(range(6)), LossConfig(type="ppo"))
    assert out.loss.item() == pytest.approx((-1.1 - 1.28 - 0.5 + 0.8 + 2.0 + 4.0) / 6)
    # dℓ/dlog π = -A·r where the ratio keeps its gradient, 0 where clipped.
    assert grad.tolist() == pytest.approx([-1.1 / 6, 0.0, -0.5 / 6, 0.0, 2.0 / 6, 0.0])
    assert out.metrics["clipped"] == pytest.approx(3 / 6)
    assert out.metrics["masked"] == pytest.approx(3 / 6)
    assert out.metrics["mismatch_kl"] == pytest.approx(sum(r - LN(r) - 1 for r in ratios) / 6)
    assert "masked_low" not in out.metrics  # icepop's band metrics do not apply


def test_ppo_ratio_exactly_on_a_bound_keeps_its_gradient_and_just_beyond_loses_it() -> None:
    cfg = LossConfig(type="ppo")
    high, low, delta = 1 + cfg.ppo_clip_high, 1 - cfg.ppo_clip_low, cfg.delta
    eps = 1e-9
    ratios = [high, low, delta, high * (1 + eps), low * (1 - eps), delta * (1 + eps)]
    adv = [1.0, -1.0, -1.0, 1.0, -1.0, -1.0]
    out, grad = _loss([LN(r) for r in ratios], [0.0] * 6, adv, [True] * 6, list(range(6)), cfg)
    # The value is continuous across a bound; only the gradient changes.
    assert out.loss.item() == pytest.approx((-high + low + delta - high + low + delta) / 6)
    assert grad.tolist() == pytest.approx([-high / 6, low / 6, delta / 6, 0.0, 0.0, 0.0])
    assert out.metrics["clipped"] == pytest.approx(3 / 6)


def test_ppo_delta_caps_a_huge_ratio_with_negative_advantage() -> None:
    # r = 1000, A = -2: without the bound ℓ = -r·A = 2000 with gradient 2000; with δ = 4: ℓ = 8, no gradient.
    capped, grad = _loss([LN(1000.0)], [0.0], [-2.0], [True], [0], LossConfig(type="ppo"))
    assert capped.loss.item() == pytest.approx(8.0) and grad.tolist() == [0.0]
    loose, grad = _loss([LN(1000.0)], [0.0], [-2.0], [True], [0], LossConfig(type="ppo", delta=1e6))
    assert loose.loss.item() == pytest.approx(2000.0) and grad.tolist() == pytest.approx([2000.0])
    # A positive advantage is clipped at 1 + ε_high whatever δ is.
    out, grad = _loss([LN(1000.0)], [0.0], [2.0], [True], [0], LossConfig(type="ppo", delta=1e6))
    assert out.loss.item() == pytest.approx(-2.0 * 1.28) and grad.tolist() == [0.0]


# --- gspo ------------------------------------------------------------------------------------------------------


def _gspo(**kwargs) -> LossConfig:
    # A band of ±0.2 keeps the hand arithmetic readable; the defaults (3e-4, 4e-4) are checked separately.
    return LossConfig(type="gspo", gspo_clip_low=0.2, gspo_clip_high=0.2, **kwargs)


GSPO_CASE = (
    # sample 0, A = +1: log r = [ln 2, 0] -> s = √2 > 1.2: clipped, ℓ = -1.2 on both tokens.
    # sample 1, A = -1: log r = [ln 1.1, ln 0.9, 0] -> s = 0.99^(1/3) in [0.8, δ]: ℓ = s, ∇ = s on every token.
    # sample 2, A = -1: log r = [ln 0.5, ln 0.5] -> s = 0.5 < 0.8: clipped, ℓ = 0.8.
    [LN(2.0), 0.0, LN(1.1), LN(0.9), 0.0, LN(0.5), LN(0.5)],
    [0.0] * 7,
    [1.0, 1.0, -1.0, -1.0, -1.0, -1.0, -1.0],
    [True] * 7,
    [0, 0, 1, 1, 1, 2, 2],
)
S1 = 0.99 ** (1 / 3)


def test_gspo_token_normalization_weights_samples_by_length() -> None:
    out, grad = _loss(*GSPO_CASE, _gspo())
    assert out.loss.item() == pytest.approx((-1.2 * 2 + 3 * S1 + 0.8 * 2) / 7)
    # One gradient per sample: tokens with different ratios (1.1, 0.9, 1) all get s_1, not their own r_t.
    assert grad.tolist() == pytest.approx([0.0, 0.0, S1 / 7, S1 / 7, S1 / 7, 0.0, 0.0])
    assert out.metrics["clipped"] == pytest.approx(4 / 7)
    assert out.metrics["masked"] == pytest.approx(4 / 7)
    assert out.metrics["masked_sequence"] == 0.0


def test_gspo_sequence_normalization_is_the_sequence_objective() -> None:
    out, grad = _loss(*GSPO_CASE, _gspo(normalization="sequence"))
    assert out.loss.item() == pytest.approx((-1.2 + S1 + 0.8) / 3)
    # d(-A·s_1)/dlog π_t = s_1 / n_1 for each of sample 1's n_1 = 3 tokens, over S = 3 samples.
    assert grad.tolist() == pytest.approx([0.0, 0.0, S1 / 9, S1 / 9, S1 / 9, 0.0, 0.0])


def test_gspo_default_band_edges_and_untrainable_tokens() -> None:
    cfg = LossConfig(type="gspo")
    high = 1 + cfg.gspo_clip_high
    # Two tokens at log r = ln(1 + ε_high): the mean is exactly on the edge and keeps its gradient; a prompt token
    # with a wild ratio does not enter the mean.
    out, grad = _loss([LN(high), LN(high), LN(50.0)], [0.0] * 3, [1.0] * 3, [True, True, False], [0, 0, 0], cfg)
    assert out.loss.item() == pytest.approx(-high)
    assert grad.tolist() == pytest.approx([-high / 2, -high / 2, 0.0])
    out, grad = _loss([LN(high * 1.0001)] * 2, [0.0] * 2, [1.0] * 2, [True] * 2, [0, 0], cfg)
    assert out.loss.item() == pytest.approx(-high) and grad.tolist() == [0.0, 0.0]
    assert out.metrics["clipped"] == 1.0


# --- cispo -----------------------------------------------------------------------------------------------------


def test_cispo_weights_are_clipped_but_every_token_keeps_a_gradient() -> None:
    # Defaults: weight clip [0, 5]. ℓ = -w·A·log π, ∇ = -w·A; N = 4.
    #   r = 0.5, A = 1, log π = -1   -> w = 0.5, ℓ = 0.5
    #   r = 1,   A = 1, log π = -2   -> w = 1,   ℓ = 2
    #   r = 7,   A = 1, log π = -0.5 -> w = 5 (clipped), ℓ = 2.5
    #   r = 2,   A = -2, log π = -1.5 -> w = 2, ℓ = -6
    trainer, ratios = [-1.0, -2.0, -0.5, -1.5], [0.5, 1.0, 7.0, 2.0]
    inference = [lp - LN(r) for lp, r in zip(trainer, ratios)]
    out, grad = _loss(trainer, inference, [1.0, 1.0, 1.0, -2.0], [True] * 4, [0, 0, 1, 1], LossConfig(type="cispo"))
    assert out.loss.item() == pytest.approx((0.5 + 2.0 + 2.5 - 6.0) / 4)
    assert grad.tolist() == pytest.approx([-0.5 / 4, -1.0 / 4, -5.0 / 4, 4.0 / 4])
    assert out.metrics["clipped"] == pytest.approx(1 / 4)
    assert out.metrics["masked"] == 0.0


def test_cispo_lower_bound_and_edge() -> None:
    cfg = LossConfig(type="cispo", cispo_clip_low=0.2)
    high = 1 + cfg.cispo_clip_high
    # r = 0.5 is raised to 0.8 (still trains); r exactly 1 + ε_high is not counted as clipped.
    out, grad = _loss([0.0, 0.0], [-LN(0.5), -LN(high)], [1.0, 1.0], [True, True], [0, 1], cfg)
    assert grad.tolist() == pytest.approx([-0.8 / 2, -high / 2])
    assert out.loss.item() == pytest.approx(0.0)  # log π = 0: the surrogate's value is 0, its gradient is not
    assert out.metrics["clipped"] == pytest.approx(1 / 2)


# --- literal formulas ------------------------------------------------------------------------------------------


def _literal(cfg: LossConfig, trainer, inference, adv, mask, ids):
    """The objectives as the papers write them (min, clip, stop-gradient), one sample at a time."""

    def surrogate(ratio, a, low, high):  # PPO's min, with INTELLECT-2's δ for a negative advantage
        j = torch.minimum(ratio * a, ratio.clamp(low, high) * a)
        return -(torch.maximum(j, cfg.delta * a) if a < 0 else j)

    per_sample, per_token = [], []
    for i in ids.unique().tolist():
        tok = (ids == i) & mask
        if not tok.any():
            continue
        a, log_r = adv[tok][0], trainer[tok] - inference[tok]
        if cfg.type == "ppo":
            ell = surrogate(torch.exp(log_r), a, 1 - cfg.ppo_clip_low, 1 + cfg.ppo_clip_high)
        elif cfg.type == "cispo":
            ell = -torch.exp(log_r).clamp(1 - cfg.cispo_clip_low, 1 + cfg.cispo_clip_high).detach() * a * trainer[tok]
        elif cfg.normalization == "sequence":  # gspo's sequence form: s_i = exp(mean log r), gradient through it
            s = torch.exp(log_r.mean())
            ell = surrogate(s, a, 1 - cfg.gspo_clip_low, 1 + cfg.gspo_clip_high).expand(len(log_r))
        else:  # gspo's token form: sg(s_i) · π_t / sg(π_t)
            s = torch.exp(log_r.mean()).detach() * torch.exp(trainer[tok] - trainer[tok].detach())
            ell = surrogate(s, a, 1 - cfg.gspo_clip_low, 1 + cfg.gspo_clip_high)
        per_sample.append(ell.mean())
        per_token.append(ell)
    if cfg.normalization == "sequence":
        return torch.stack(per_sample).mean()
    return torch.cat(per_token).sum() / int(mask.sum())


@pytest.mark.parametrize("normalization", ["token", "sequence"])
@pytest.mark.parametrize("kind", ["ppo", "gspo", "cispo"])
def test_value_and_autograd_gradient_match_the_literal_formula(kind: str, normalization: str) -> None:
    gen = torch.Generator().manual_seed(3)
    n = 24
    trainer = torch.randn(n, generator=gen, dtype=torch.float64) - 1.5
    inference = trainer + 0.35 * torch.randn(n, generator=gen, dtype=torch.float64)
    inference[5] = trainer[5] - LN(8.0)  # one ratio of 8: beyond δ when its advantage is negative
    ids = torch.tensor([0] * 5 + [1] * 4 + [2] * 6 + [3] * 3 + [4] * 6)
    adv = torch.tensor([0.7, -1.3, 0.4, -0.6, 1.1], dtype=torch.float64)[ids]
    mask = torch.rand(n, generator=gen) > 0.25
    mask[5] = True
    cfg = LossConfig(type=kind, normalization=normalization, gspo_clip_low=0.05, gspo_clip_high=0.05)
    ours = trainer.clone().requires_grad_()
    out = policy_loss(ours, inference, adv, mask, ids, cfg)
    out.loss.backward()
    theirs = trainer.clone().requires_grad_()
    expected = _literal(cfg, theirs, inference, adv, mask, ids)
    expected.backward()
    assert out.loss.item() == pytest.approx(expected.item(), rel=1e-12)
    assert torch.allclose(ours.grad, theirs.grad, rtol=1e-10, atol=1e-14)
    assert ours.grad.abs().sum() > 0 and (ours.grad[~mask] == 0).all()
    assert 0 < out.metrics["clipped"] < 1  # the case crosses bounds, so both branches are checked


# --- shared: normalisation, accumulation, KL, non-finite inputs, empty calls ---------------------------------


def test_sequence_normalization_averages_sample_means() -> None:
    # On policy (r = 1) icepop gives ℓ = -A. Sample 0: two tokens, A = 1; sample 1: one token, A = -3;
    # sample 2: nothing trainable (not counted in S).
    args = ([-1.0, -1.0, -2.0, -0.5], [-1.0, -1.0, -2.0, -0.5], [1.0, 1.0, -3.0, 5.0], [True, True, True, False],
            [0, 0, 1, 2])
    token, _ = _loss(*args)
    assert token.loss.item() == pytest.approx((-1 - 1 + 3) / 3)
    sequence, grad = _loss(*args, LossConfig(normalization="sequence"))
    assert sequence.loss.item() == pytest.approx((-1.0 + 3.0) / 2)
    assert grad.tolist() == pytest.approx([-1 / 4, -1 / 4, 3 / 2, 0.0])
    scaled, _ = _loss(*args, LossConfig(normalization="sequence"), normalizer=8)  # the step had 8 samples
    assert scaled.loss.item() == pytest.approx((-1.0 + 3.0) / 8)


@pytest.mark.parametrize("normalization", ["token", "sequence"])
@pytest.mark.parametrize("kind", TYPES)
def test_two_calls_accumulate_to_one_call_on_the_whole_batch(kind: str, normalization: str) -> None:
    gen = torch.Generator().manual_seed(7)
    lengths = [3, 2, 4, 1, 3]  # samples 0-1 in the first call, 2-4 in the second; sample 3 has no trainable token
    n = sum(lengths)
    trainer = torch.randn(n, generator=gen, dtype=torch.float64) - 1
    inference = trainer + 0.3 * torch.randn(n, generator=gen, dtype=torch.float64)
    reference = trainer + 0.2 * torch.randn(n, generator=gen, dtype=torch.float64)
    ids = torch.repeat_interleave(torch.arange(5), torch.tensor(lengths))
    adv = torch.tensor([1.0, -0.5, 0.25, 2.0, -1.0], dtype=torch.float64)[ids]
    mask = torch.tensor([False, True, True, True, True, False, True, True, True, False, False, True, True])
    cfg = LossConfig(type=kind, normalization=normalization, kl_coef=0.05, gspo_clip_low=0.1, gspo_clip_high=0.1)
    step = int(mask.sum()) if normalization == "token" else 4  # samples with a trainable token

    whole = trainer.clone().requires_grad_()
    one = policy_loss(whole, inference, adv, mask, ids, cfg, normalizer=step, reference_logprobs=reference)
    one.loss.backward()
    split = trainer.clone().requires_grad_()
    total = 0.0
    for part in (slice(0, 5), slice(5, n)):
        local_ids = ids[part] - ids[part][0]  # ids restart in every micro-batch
        out = policy_loss(split[part], inference[part], adv[part], mask[part], local_ids, cfg, normalizer=step,
                          reference_logprobs=reference[part])
        out.loss.backward()
        total += out.loss.item()
    assert total == pytest.approx(one.loss.item(), rel=1e-12)
    assert torch.allclose(split.grad, whole.grad, rtol=1e-12, atol=1e-15)


def test_kl_penalty_is_k3_to_the_reference() -> None:
    # On policy with A = 0: only the penalty. d = ref - log π = [0, ln 2]: k3 = [0, 2 - ln 2 - 1];
    # dk3/dlog π = 1 - e^d = [0, -1]. The prompt token's huge gap is not trainable.
    trainer = [LN(0.5), LN(0.25), -9.0]
    reference = torch.tensor([LN(0.5), LN(0.5), -0.1], dtype=torch.float64)
    args = (trainer, trainer, [0.0] * 3, [True, True, False], [0, 0, 0])
    out, grad = _loss(*args, LossConfig(kl_coef=0.1), reference_logprobs=reference)
    k3 = 1 - LN(2.0)
    assert out.loss.item() == pytest.approx(0.1 * k3 / 2)
    assert grad.tolist() == pytest.approx([0.0, 0.1 * -1.0 / 2, 0.0])
    assert out.metrics["ref_kl"] == pytest.approx(k3 / 2)
    # Normalised like the main term: one sample of two tokens, S = 1.
    out, _ = _loss(*args, LossConfig(kl_coef=0.1, normalization="sequence"), reference_logprobs=reference)
    assert out.loss.item() == pytest.approx(0.1 * k3 / 2)
    # Off (the default), a reference is only measured.
    out, grad = _loss(*args, reference_logprobs=reference)
    assert out.loss.item() == 0.0 and grad.tolist() == [0.0, 0.0, 0.0]
    assert out.metrics["ref_kl"] == pytest.approx(k3 / 2)
    with pytest.raises(ValueError, match="kl_coef > 0 needs reference_logprobs"):
        _loss(*args, LossConfig(kl_coef=0.1))


@pytest.mark.parametrize("normalization", ["token", "sequence"])
@pytest.mark.parametrize("kind", TYPES)
def test_non_finite_or_overflowing_inference_logprobs_never_give_nan(kind: str, normalization: str) -> None:
    # Samples 0-3 hold one bad token each (NaN, -inf, +inf, and a finite log-ratio of 200 that overflows exp()
    # in float32), sample 4 two good ones.
    trainer = torch.tensor([-1.0, -1.0, -1.0, -1.0, -0.5, -0.7], requires_grad=True)
    inference = torch.tensor([math.nan, -math.inf, math.inf, -201.0, -0.5, -0.7])
    adv = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, 1.0])
    args = (inference, adv, torch.ones(6, dtype=torch.bool), torch.tensor([0, 1, 2, 3, 4, 4]))
    out = policy_loss(trainer, *args, LossConfig(type=kind, normalization=normalization))
    out.loss.backward()
    assert torch.isfinite(out.loss) and all(math.isfinite(v) for v in out.metrics.values())
    grad = trainer.grad.tolist()
    assert grad[:3] == [0.0, 0.0, 0.0]  # a non-finite ratio adds nothing
    if kind == "cispo":  # its weight is clipped to 1 + ε_high, and it still trains: -w·A / N > 0
        assert grad[3] > 0 and out.metrics["masked"] == pytest.approx(3 / 6)
    else:  # masked (icepop) or clipped (ppo, gspo: δ with A < 0)
        assert grad[3] == 0.0 and out.metrics["masked"] == pytest.approx(4 / 6)
    assert grad[4] < 0 and grad[5] < 0  # on policy with A > 0: raise log π
    # The KL term reads only π and the reference, so it stays finite next to these tokens.
    trainer.grad = None
    out = policy_loss(trainer, *args, LossConfig(type=kind, normalization=normalization, kl_coef=0.1),
                      reference_logprobs=trainer.detach() - 0.1)
    out.loss.backward()
    assert torch.isfinite(out.loss) and torch.isfinite(trainer.grad).all()


@pytest.mark.parametrize("normalization", ["token", "sequence"])
@pytest.mark.parametrize("kind", TYPES)
def test_calls_without_trainable_tokens_give_zero_loss(kind: str, normalization: str) -> None:
    cfg = LossConfig(type=kind, normalization=normalization)
    out, grad = _loss([-1.0, -2.0], [-1.0, -3.0], [1.0, 1.0], [False, False], [0, 1], cfg)
    assert out.loss.item() == 0.0 and out.metrics == {} and grad.tolist() == [0.0, 0.0]
    assert out.trainable_tokens == 0
    empty = torch.zeros(0, dtype=torch.float64, requires_grad=True)
    out = policy_loss(empty, torch.zeros(0), torch.zeros(0), torch.zeros(0, dtype=torch.bool),
                      torch.zeros(0, dtype=torch.long), cfg)
    out.loss.backward()
    assert out.loss.item() == 0.0 and out.metrics == {} and empty.grad.shape == (0,)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"type": "grpo"}, "type"), ({"normalization": "sample"}, "normalization"),
     ({"ppo_clip_low": -0.1}, "ppo_clip_low"), ({"ppo_clip_high": -0.01}, "ppo_clip_high"),
     ({"ppo_clip_low": 1.5}, "ppo_clip_low"), ({"delta": 0.5}, "delta"), ({"delta": math.inf}, "delta"),
     ({"gspo_clip_low": -3e-4}, "gspo_clip_low"), ({"gspo_clip_high": math.nan}, "gspo_clip_high"),
     ({"cispo_clip_high": -1.0}, "cispo_clip_high"), ({"cispo_clip_low": 2.0}, "cispo_clip_low"),
     ({"kl_coef": -0.1}, "kl_coef")],
)
def test_invalid_family_configs_name_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ValidationError) as error:
        LossConfig(**kwargs)
    assert error.value.errors()[0]["loc"] == (field,)
    assert field in str(error.value)


def test_every_config_field_has_a_description() -> None:
    assert all(info.description for info in LossConfig.model_fields.values())
    assert LossConfig(delta=1.0, ppo_clip_low=1.0, ppo_clip_high=0.0).delta == 1.0  # the closed ends are allowed
