"""The tiny model: its shape, seeded weights, and loading from a folder."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.model.config import ModelConfig
from trainer_adapter.model.tiny import load_model, parameter_count
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


@pytest.mark.parametrize(
    "shape",
    [{}, {"num_layers": 3, "hidden_size": 96, "num_heads": 6, "num_kv_heads": 3, "intermediate_size": 200}],
)
def test_parameter_count_is_that_of_the_built_model(shape: dict[str, int]) -> None:
    config = ModelConfig(**shape)
    model, _ = load_model(config)
    assert parameter_count(config) == sum(p.numel() for p in model.parameters())  # tied head counted once


def test_the_gpu_recipe_builds_a_model_of_about_100m_parameters() -> None:
    from trainer_adapter.config import load_config
    from trainer_adapter.main_job_config import MainJobConfig

    job = load_config(MainJobConfig, Path(__file__).resolve().parents[3] / "configs" / "main_job" / "gpu.toml")
    model, _ = load_model(ModelConfig.model_validate(job.sft.model_shape(job.seed)))
    count = sum(p.numel() for p in model.parameters())
    assert 90e6 <= count <= 115e6, count
    assert model.config.model_type == "llama" and model.lm_head.weight is model.model.embed_tokens.weight
