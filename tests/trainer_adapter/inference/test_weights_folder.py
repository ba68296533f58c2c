"""Reading safetensors folders from their headers, and checking one against the served model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from trainer_adapter.inference.errors import WeightsFolderError
from trainer_adapter.inference.weights_folder import (
    TensorInfo,
    check_compatible,
    is_tied,
    iter_tensors,
    read_header,
    read_index,
    weight_files,
)

TENSORS = {
    "model.embed_tokens.weight": np.zeros((8, 4), dtype=np.float32),
    "model.layers.0.self_attn.q_proj.weight": np.ones((4, 4), dtype=np.float32),
    "model.norm.weight": np.ones((4,), dtype=np.float16),
}


def folder(tmp_path: Path, tensors: dict[str, np.ndarray] = TENSORS, tied: bool = True, name: str = "m") -> Path:
    path = tmp_path / name
    path.mkdir()
    save_file(tensors, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps({"tie_word_embeddings": tied}))
    return path


def test_index_from_headers(tmp_path: Path) -> None:
    index = read_index(folder(tmp_path))
    assert index == {
        "model.embed_tokens.weight": TensorInfo("F32", (8, 4)),
        "model.layers.0.self_attn.q_proj.weight": TensorInfo("F32", (4, 4)),
        "model.norm.weight": TensorInfo("F16", (4,)),
    }


def test_sharded_folder_reads_only_the_files_its_index_names(tmp_path: Path) -> None:
    path = tmp_path / "sharded"
    path.mkdir()
    save_file({"a": np.zeros(2, dtype=np.float32)}, str(path / "model-00001-of-00002.safetensors"))
    save_file({"b": np.zeros(3, dtype=np.float32)}, str(path / "model-00002-of-00002.safetensors"))
    save_file({"a": np.zeros(2, dtype=np.float32)}, str(path / "consolidated.safetensors"))  # not in the index
    index = {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}
    (path / "model.safetensors.index.json").write_text(json.dumps(index))
    names = [p.name for p in weight_files(path)]
    assert names == ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    assert set(read_index(path)) == {"a", "b"}


def test_iter_tensors_yields_every_tensor(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="loading tensors needs torch (the vLLM venv has it)")
    got = dict(iter_tensors(folder(tmp_path)))
    assert set(got) == set(TENSORS) and got["model.layers.0.self_attn.q_proj.weight"].sum().item() == 16


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "absent", "does not exist"),
        (lambda p: p, "holds no *.safetensors file"),
        (lambda p: (p / "x.safetensors").write_bytes(b"\x01") and p, "shorter than its header length"),
        (lambda p: (p / "x.safetensors").write_bytes((2**40).to_bytes(8, "little")) and p, "header length"),
        (lambda p: (p / "x.safetensors").write_bytes((4).to_bytes(8, "little") + b"nope") and p, "bad header"),
        (lambda p: (p / "x.safetensors").write_bytes((2).to_bytes(8, "little") + b"[]") and p, "not an object"),
        (
            lambda p: (
                (p / "model.safetensors.index.json").write_text('{"weight_map": {"a": "gone.safetensors"}}') and p
            ),
            "names files that are not there",
        ),
        (lambda p: (p / "model.safetensors.index.json").write_text("{}") and p, "has no weight_map"),
    ],
)
def test_unreadable_folders_are_named(tmp_path: Path, make, message: str) -> None:
    with pytest.raises(WeightsFolderError, match=message.replace("*", r"\*")):
        read_index(make(tmp_path))


def test_a_tensor_in_two_files_is_an_error(tmp_path: Path) -> None:
    save_file({"a": np.zeros(2, dtype=np.float32)}, str(tmp_path / "one.safetensors"))
    save_file({"a": np.zeros(2, dtype=np.float32)}, str(tmp_path / "two.safetensors"))
    with pytest.raises(WeightsFolderError, match="more than one file"):
        read_index(tmp_path)


def test_header_entry_without_shape_is_an_error(tmp_path: Path) -> None:
    header = json.dumps({"a": {"dtype": "F32"}}).encode()
    path = tmp_path / "x.safetensors"
    path.write_bytes(len(header).to_bytes(8, "little") + header)
    with pytest.raises(WeightsFolderError, match="no dtype or shape"):
        read_header(path)


def test_same_names_and_shapes_pass_even_in_another_dtype(tmp_path: Path) -> None:
    base = read_index(folder(tmp_path, name="base"))
    new = read_index(folder(tmp_path, {k: v.astype(np.float16) for k, v in TENSORS.items()}, name="new"))
    check_compatible(new, base, tied=False)


def test_unknown_missing_and_reshaped_tensors_are_all_reported(tmp_path: Path) -> None:
    base = read_index(folder(tmp_path, name="base"))
    changed = dict(TENSORS)
    changed.pop("model.norm.weight")
    changed["model.extra.weight"] = np.zeros(1, dtype=np.float32)
    changed["model.embed_tokens.weight"] = np.zeros((9, 4), dtype=np.float32)
    new = read_index(folder(tmp_path, changed, name="new"))
    with pytest.raises(WeightsFolderError) as info:
        check_compatible(new, base, tied=True)
    text = str(info.value)
    assert "unknown tensors: model.extra.weight" in text
    assert "missing tensors: model.norm.weight" in text
    assert "model.embed_tokens.weight [9, 4] (served: [8, 4])" in text


def test_tied_head_may_come_or_go_only_when_tied(tmp_path: Path) -> None:
    base = read_index(folder(tmp_path, name="base"))
    with_head = read_index(folder(tmp_path, {**TENSORS, "lm_head.weight": np.zeros((8, 4), np.float32)}, name="h"))
    check_compatible(with_head, base, tied=True)
    with pytest.raises(WeightsFolderError, match=r"unknown tensors: lm_head\.weight"):
        check_compatible(with_head, base, tied=False)


def test_long_problem_lists_are_cut(tmp_path: Path) -> None:
    base = {f"t{i}": TensorInfo("F32", (1,)) for i in range(9)}
    with pytest.raises(WeightsFolderError, match="and 4 more"):
        check_compatible({}, base, tied=False)


def test_is_tied_reads_the_config(tmp_path: Path) -> None:
    assert is_tied(folder(tmp_path, tied=True, name="a"))
    assert not is_tied(folder(tmp_path, tied=False, name="b"))
    nested = tmp_path / "c"
    nested.mkdir()
    (nested / "config.json").write_text(json.dumps({"text_config": {"tie_word_embeddings": True}}))
    assert is_tied(nested)
    assert not is_tied(tmp_path / "nowhere")
    (nested / "config.json").write_text("not json")
    with pytest.raises(WeightsFolderError, match="cannot read"):
        is_tied(nested)
