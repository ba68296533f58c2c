"""The tiny model: its shape, seeded weights, and loading from a folder."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.model.tiny import ModelConfig, load_model
from trainer_adapter.model.tokenizer import VOCAB_SIZE


def test_tiny_model_shape_and_tied_head() -> None:
    model, tokenizer = load_model(ModelConfig())
    assert model.config.model_type == "llama"
    assert (model.config.hidden_size, model.config.num_hidden_layers, model.config.vocab_size) == (128, 2, VOCAB_SIZE)
    assert model.lm_head.weight is model.model.embed_tokens.weight
    assert model.config.eos_token_id == tokenizer.eos_token_id
    assert model.training


def test_weights_follow_the_seed() -> None:
    a, _ = load_model(ModelConfig(seed=1))
    b, _ = load_model(ModelConfig(seed=1))
    c, _ = load_model(ModelConfig(seed=2))
    assert torch.equal(a.model.embed_tokens.weight, b.model.embed_tokens.weight)
    assert not torch.equal(a.model.embed_tokens.weight, c.model.embed_tokens.weight)


def test_load_from_a_folder(tmp_path: Path) -> None:
    model, tokenizer = load_model(ModelConfig(seed=3))
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    again, again_tokenizer = load_model(ModelConfig(path=tmp_path))
    assert torch.equal(again.model.embed_tokens.weight, model.model.embed_tokens.weight)
    assert again_tokenizer.encode("ab") == [97, 98]


def test_bad_model_configs() -> None:
    with pytest.raises(ValidationError, match="divide"):
        ModelConfig(hidden_size=100, num_heads=3)
    with pytest.raises(TrainerConfigError, match="no config.json"):
        load_model(ModelConfig(path=Path("/nonexistent")))
