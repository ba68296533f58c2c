"""LoRA through the trainer's own paths: adapters on the named modules, the base frozen, AdamW over the adapters
only, exports merged into plain weights that load (and answer) as the adapted model does, and checkpoints that
bring the adapters back."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from pydantic import ValidationError
from transformers import AutoModelForCausalLM

from trainer_adapter.model.config import LoraSettings, ModelConfig
from trainer_adapter.model.lora import base_model, is_lora, merged_state_dict
from trainer_adapter.model.tiny import load_model
from trainer_adapter.train.checkpoint import load_checkpoint, save_checkpoint
from trainer_adapter.train.config import OptimizerConfig
from trainer_adapter.train.distributed import init_distributed, shard_model
from trainer_adapter.train.export import WEIGHTS_FILE, export_weights, full_state_dict
from trainer_adapter.train.optimizer import build_optimizer

IDS = torch.tensor([[257, 117, 115, 101, 114, 10, 49, 50]])
LORA = LoraSettings(enabled=True, rank=4, alpha=8, target_modules=["q_proj", "v_proj", "down_proj"])


def _adapted(seed: int = 0, steps: int = 2):
    """A tiny model with adapters, trained ``steps`` AdamW steps so that lora_B is no longer zero."""
    world = init_distributed()
    model, tokenizer = load_model(ModelConfig(seed=seed, lora=LORA))
    shard_model(model, world)
    optimizer = build_optimizer(model, OptimizerConfig(lr=1e-2))
    for _ in range(steps):
        model(input_ids=IDS).logits.logsumexp(-1).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    return world, model, tokenizer, optimizer


def test_adapters_train_and_the_base_stays_frozen() -> None:
    before, _ = load_model(ModelConfig(seed=0))
    world, model, _, optimizer = _adapted()
    assert is_lora(model)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(".lora_A." in n or ".lora_B." in n for n in trainable)
    assert {n.split(".lora_")[0].rsplit(".", 1)[1] for n in trainable} == {"q_proj", "v_proj", "down_proj"}
    # AdamW holds state for the adapters only
    params = [p for group in optimizer.param_groups for p in group["params"]]
    assert len(params) == len(trainable) and all(p.requires_grad for p in params)
    base = {n.removeprefix("base_model.model.").replace(".base_layer.", "."): p
            for n, p in model.named_parameters() if not p.requires_grad}
    assert all(torch.equal(base[n], p) for n, p in before.named_parameters())  # frozen: unchanged by the steps
    lora_b = [p for n, p in model.named_parameters() if ".lora_B." in n]
    assert any(p.abs().sum() > 0 for p in lora_b)  # the adapters did move


def test_the_merge_equals_peft_own_merge() -> None:
    _, model, _, _ = _adapted(seed=1)
    merged = merged_state_dict(full_state_dict(model), LORA.scaling)
    reference = model.merge_and_unload().state_dict()
    assert merged.keys() == reference.keys()
    assert all(torch.allclose(merged[k], reference[k], atol=1e-6) for k in reference)


def test_the_export_is_a_plain_folder_that_answers_as_the_adapted_model(tmp_path: Path) -> None:
    world, model, tokenizer, _ = _adapted(seed=2)
    dest = export_weights(model, tokenizer, tmp_path / "step_2", world)
    loaded = AutoModelForCausalLM.from_pretrained(dest, dtype=torch.float32).eval()
    assert not is_lora(loaded) and (dest / WEIGHTS_FILE).is_file()
    assert not [p for p in dest.iterdir() if "adapter" in p.name]
    model.eval()
    with torch.no_grad():
        assert torch.allclose(loaded(input_ids=IDS).logits, model(input_ids=IDS).logits, atol=1e-5)
        # and differs from the base: the adapters are in the export, not dropped
        plain = base_model(model)
        with model.disable_adapter():
            assert not torch.allclose(loaded(input_ids=IDS).logits, plain(input_ids=IDS).logits, atol=1e-4)


def test_a_checkpoint_brings_the_adapters_back(tmp_path: Path) -> None:
    world, model, _, optimizer = _adapted(seed=3)
    path = save_checkpoint(tmp_path / "checkpoints", 2, model, optimizer, world)
    fresh, _ = load_model(ModelConfig(seed=3, lora=LORA))
    shard_model(fresh, world)
    fresh_optimizer = build_optimizer(fresh, OptimizerConfig(lr=1e-2))
    assert load_checkpoint(path, fresh, fresh_optimizer)["step"] == 2
    want = dict(model.named_parameters())
    assert all(torch.equal(p, want[n]) for n, p in fresh.named_parameters())
    assert len(fresh_optimizer.state) == len(optimizer.state) > 0


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValidationError, match="rank"):
        ModelConfig.model_validate({"lora": {"enabled": True, "rank": 0}})
    with pytest.raises(ValidationError, match="target_modules"):
        ModelConfig.model_validate({"lora": {"enabled": True, "target_modules": []}})
    with pytest.raises(ValidationError, match="Extra inputs"):
        ModelConfig.model_validate({"lora": {"rnak": 4}})
