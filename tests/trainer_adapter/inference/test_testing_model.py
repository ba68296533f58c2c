"""The inference tests' model folders: the tiny model, or the model a main job config builds, and its variant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from safetensors.torch import load_file

from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.inference.testing_model import WEIGHTS_FILE, main


def test_a_main_job_config_names_the_shape_written(tmp_path: Path) -> None:
    job = tmp_path / "job.toml"
    job.write_text("[sft]\nnum_layers = 3\nhidden_size = 64\nnum_heads = 8\nnum_kv_heads = 4\nintermediate_size = 96\n")
    main(tmp_path / "out", seed=0, variant_seed=1, main_job=job)
    config = json.loads((tmp_path / "out" / "base" / "config.json").read_text())
    assert (config["num_hidden_layers"], config["hidden_size"], config["num_attention_heads"],
            config["num_key_value_heads"], config["intermediate_size"]) == (3, 64, 8, 4, 96)  # fmt: skip
    base = load_file(tmp_path / "out" / "base" / WEIGHTS_FILE)
    variant = load_file(tmp_path / "out" / "variant" / WEIGHTS_FILE)
    assert base.keys() == variant.keys()
    assert all(base[k].shape == variant[k].shape and not base[k].equal(variant[k]) for k in base)


def test_a_bad_main_job_config_is_refused(tmp_path: Path) -> None:
    job = tmp_path / "job.toml"
    job.write_text("[sft]\nhidden_size = 100\nnum_heads = 3\n")
    with pytest.raises(TrainerConfigError, match="hidden_size must divide"):
        main(tmp_path / "out", seed=0, variant_seed=1, main_job=job)
    assert not (tmp_path / "out").exists()
