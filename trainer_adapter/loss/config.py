"""``[loss]``: which policy loss the RL trainer takes, and each variant's bounds.

One flat table, so every knob is a dotted CLI key (``loss.type=ppo``, ``loss.ppo_clip_high=0.28``).
A field named after a variant is read by that variant only; ``normalization`` and
``kl_coef`` apply to all of them. The formulas are in :mod:`trainer_adapter.loss`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

LossType = Literal["icepop", "ppo", "gspo", "cispo"]
Normalization = Literal["token", "sequence"]


class LossConfig(BaseModel):
    """The policy loss: its variant, normalisation, the variant's bounds, and an optional KL penalty."""

    model_config = ConfigDict(extra="forbid")

    type: LossType = Field(
        "icepop", description="Policy loss: icepop (mask tokens outside a ratio band), ppo (clipped surrogate with "
        "the INTELLECT-2 bound δ), gspo (clipped sequence ratio), cispo (clipped, stop-gradient token weight).",
    )
    normalization: Normalization = Field(
        "token", description="token: sum over the step's trainable tokens / their count; sequence: each sample's "
        "token mean, then the mean over the step's samples that have a trainable token.",
    )

    # IcePop (the original names: configs written before the family keep working).
    mask_low: float = Field(0.5, gt=0, description="icepop: α, tokens with ratio π/μ below this are masked.")
    mask_high: float = Field(5.0, gt=0, description="icepop: β, tokens with ratio π/μ above this are masked.")
    sequence_mask_low: float = Field(
        1e-5, ge=0, description="icepop: ρ, a whole sample is masked when any of its ratios is below this (0 = off)."
    )

    ppo_clip_low: float = Field(
        0.2, ge=0, le=1, allow_inf_nan=False, description="ppo: ε_low, the ratio is clipped below at 1 − ε_low."
    )
    ppo_clip_high: float = Field(
        0.28, ge=0, allow_inf_nan=False,
        description="ppo: ε_high, the ratio is clipped above at 1 + ε_high (0.28: DAPO's clip-higher).",
    )
    delta: float = Field(
        4.0, ge=1, allow_inf_nan=False,
        description="ppo and gspo: δ, for a negative advantage the ratio counts at most δ (INTELLECT-2's two-sided "
        "clip), so a token the trainer now finds far likelier cannot blow up the update.",
    )
    gspo_clip_low: float = Field(
        3e-4, ge=0, le=1, allow_inf_nan=False, description="gspo: ε_low for the sequence ratio (1 − ε_low)."
    )
    gspo_clip_high: float = Field(
        4e-4, ge=0, allow_inf_nan=False, description="gspo: ε_high for the sequence ratio (1 + ε_high)."
    )
    cispo_clip_low: float = Field(
        1.0, ge=0, le=1, allow_inf_nan=False,
        description="cispo: ε_low, the token weight is at least 1 − ε_low (1: no lower bound, as in MiniMax-M1).",
    )
    cispo_clip_high: float = Field(
        4.0, ge=0, allow_inf_nan=False, description="cispo: ε_high, the token weight is at most 1 + ε_high."
    )

    kl_coef: float = Field(
        0.0, ge=0, allow_inf_nan=False,
        description="Weight of the k3 KL penalty to a frozen copy of the initial model (0 = off; > 0 loads it).",
    )

    @model_validator(mode="after")
    def _band_is_ordered(self) -> LossConfig:
        if not self.mask_low <= 1.0 <= self.mask_high:
            raise ValueError(f"need mask_low <= 1 <= mask_high, got [{self.mask_low}, {self.mask_high}]")
        return self


__all__ = ["LossConfig", "LossType", "Normalization"]
