"""Checkpoints round-trip the sharded model and optimizer; exports load back as the same model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from trainer_adapter.errors import CheckpointError
from trainer_adapter.model.config import ModelConfig
from trainer_adapter.model.tiny import load_model
from trainer_adapter.train.checkpoint import checkpoint_steps, latest_checkpoint, load_checkpoint, save_checkpoint
from trainer_adapter.train.config import OptimizerConfig
from trainer_adapter.train.distributed import init_distributed, shard_model
from trainer_adapter.train.export import WEIGHTS_FILE, export_weights, full_state_dict
from trainer_adapter.train.optimizer import build_optimizer


def _trained(seed: int):
    world = init_distributed()
    model, tokenizer = load_model(ModelConfig(seed=seed))
    shard_model(model, world)
    optimizer = build_optimizer(model, OptimizerConfig(lr=1e-2))
    ids = torch.tensor([[257, 97, 98, 99, 258]])
    model(input_ids=ids).logits.sum().backward()
    optimizer.step()
    optimizer.zero_grad()
    return world, model, tokenizer, optimizer


def test_export_loads_back_as_the_same_model(tmp_path: Path) -> None:
    world, model, tokenizer, _ = _trained(seed=1)
    dest = export_weights(model, tokenizer, tmp_path / "weights" / "step_1", world)
    assert sorted(p.name for p in (tmp_path / "weights").iterdir()) == ["step_1"]  # no temporary folder left
    tensors = load_file(dest / WEIGHTS_FILE)
    assert "lm_head.weight" not in tensors  # tied: written once, as the embedding
    loaded = AutoModelForCausalLM.from_pretrained(dest, dtype=torch.float32).eval()
    ids = torch.tensor([[257, 117, 115, 101, 114, 10, 49, 50]])
    with torch.no_grad():
        expected = model(input_ids=ids).logits
        got = loaded(input_ids=ids).logits
    assert torch.equal(got, expected)
    assert AutoTokenizer.from_pretrained(dest).encode("ab") == [97, 98]
    assert json.loads((dest / "generation_config.json").read_text())["eos_token_id"] == tokenizer.eos_token_id


def test_export_replaces_an_existing_folder(tmp_path: Path) -> None:
    world, model, tokenizer, _ = _trained(seed=2)
    dest = tmp_path / "w"
    dest.mkdir()
    (dest / "stale.txt").write_text("old")
    export_weights(model, tokenizer, dest, world)
    assert not (dest / "stale.txt").exists() and (dest / WEIGHTS_FILE).is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["w"]


def test_checkpoint_round_trip_and_pruning(tmp_path: Path) -> None:
    world, model, _, optimizer = _trained(seed=3)
    root = tmp_path / "checkpoints"
    for step in (1, 2, 3):
        save_checkpoint(root, step, model, optimizer, world, keep=2, progress={"note": "x"})
    assert checkpoint_steps(root) == [2, 3]
    (root / ".step_4.tmp").mkdir()  # a save killed half-way is not a checkpoint
    (root / "step_5").mkdir()  # nor is a folder without progress
    assert latest_checkpoint(root) == root / "step_3"

    expected = {k: v.clone() for k, v in full_state_dict(model).items()}
    _, other, _, other_optimizer = _trained(seed=4)
    progress = load_checkpoint(root / "step_3", other, other_optimizer)
    assert progress == {"step": 3, "note": "x"}
    got = full_state_dict(other)
    assert all(torch.equal(got[k], v) for k, v in expected.items())
    state = other_optimizer.state_dict()["state"]
    assert state and all(int(s["step"]) == 1 for s in state.values())


def test_loading_an_incomplete_checkpoint_fails(tmp_path: Path) -> None:
    _, model, _, optimizer = _trained(seed=5)
    with pytest.raises(CheckpointError, match="not a complete checkpoint"):
        load_checkpoint(tmp_path, model, optimizer)
