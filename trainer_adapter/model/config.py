"""What model the trainer starts from and how it is adapted: the configs alone, importable without torch or
transformers (``vf-train`` builds its options from them before any of that is needed)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainer_adapter.errors import TrainerConfigError


class LoraSettings(BaseModel):
    """Low-rank adapters instead of full fine-tuning."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(False, description="Train LoRA adapters on target_modules (the base weights frozen).")
    rank: int = Field(16, gt=0, description="LoRA rank r.")
    alpha: int = Field(32, gt=0, description="LoRA alpha; the update is scaled by alpha / rank.")
    dropout: float = Field(0.0, ge=0, lt=1, description="Dropout on the adapters' input (0: deterministic).")
    target_modules: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        min_length=1, description="Names of the linear modules that get adapters (Llama-family names).")

    @property
    def scaling(self) -> float:
        return self.alpha / self.rank


class ModelConfig(BaseModel):
    """Which model to train: an existing Hugging Face folder, or the tiny model's shape."""

    model_config = ConfigDict(extra="forbid")

    path: Path | None = Field(
        None, description="A Hugging Face model folder (config, safetensors, tokenizer); unset: build the tiny model."
    )
    hidden_size: int = Field(128, gt=0, description="Tiny model: width of the residual stream.")
    num_layers: int = Field(2, gt=0, description="Tiny model: decoder layers.")
    num_heads: int = Field(4, gt=0, description="Tiny model: attention heads (head size = hidden_size / num_heads).")
    num_kv_heads: int = Field(2, gt=0, description="Tiny model: key/value heads (grouped-query attention).")
    intermediate_size: int = Field(512, gt=0, description="Tiny model: width of the SwiGLU MLP.")
    max_position_embeddings: int = Field(1024, gt=0, description="Tiny model: longest sequence in tokens.")
    seed: int = Field(0, description="Tiny model: seed of the initial weights.")
    lora: LoraSettings = Field(default_factory=LoraSettings, description="LoRA adapters instead of full training.")

    @model_validator(mode="after")
    def _heads_divide(self) -> ModelConfig:
        if self.hidden_size % self.num_heads or self.num_heads % self.num_kv_heads:
            raise ValueError("hidden_size must divide by num_heads, and num_heads by num_kv_heads")
        return self


def check_model_folder(path: Path) -> None:
    """Raise :class:`TrainerConfigError` unless ``path`` is a Hugging Face model folder (has ``config.json``)."""
    if not (path / "config.json").is_file():
        raise TrainerConfigError(f"model.path {path} is not a Hugging Face model folder (no config.json)")


__all__ = ["LoraSettings", "ModelConfig", "check_model_folder"]
