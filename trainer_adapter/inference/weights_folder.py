"""A Hugging Face safetensors folder as the inference server reads it: its files, its tensor index, its tensors.

The index (names, dtypes, shapes) comes from the files' JSON headers alone, so a folder is checked against
the served model before a single weight is touched and without importing torch::

    check_compatible(read_index(new_dir), read_index(base_dir), tied=is_tied(base_dir))
    for name, tensor in iter_tensors(new_dir): ...
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trainer_adapter.inference.errors import WeightsFolderError

if TYPE_CHECKING:
    import torch

INDEX_FILE = "model.safetensors.index.json"
TIED_HEAD = "lm_head.weight"
_HEADER_LIMIT = 100 * 2**20  # the safetensors format caps its JSON header at 100 MB


@dataclass(frozen=True)
class TensorInfo:
    """What a safetensors header says about one tensor."""

    dtype: str
    shape: tuple[int, ...]


def weight_files(folder: str | Path) -> list[Path]:
    """The safetensors files of a model folder: those its index names, else every ``*.safetensors``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise WeightsFolderError(f"weights folder {folder} does not exist")
    index = folder / INDEX_FILE
    if index.is_file():
        # A sharded checkpoint: only the files its index names (a folder may also hold a consolidated copy).
        weight_map = _read_json(index).get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise WeightsFolderError(f"{index} has no weight_map")
        files = [folder / name for name in sorted(set(weight_map.values()))]
        missing = [f.name for f in files if not f.is_file()]
        if missing:
            raise WeightsFolderError(f"{index} names files that are not there: {', '.join(missing)}")
        return files
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise WeightsFolderError(f"weights folder {folder} holds no *.safetensors file")
    return files


def read_header(path: Path) -> dict[str, TensorInfo]:
    """Names, dtypes and shapes of the tensors in one safetensors file (its header only)."""
    with path.open("rb") as fh:
        prefix = fh.read(8)
        if len(prefix) != 8:
            raise WeightsFolderError(f"{path} is not a safetensors file (shorter than its header length)")
        (length,) = struct.unpack("<Q", prefix)
        if length > _HEADER_LIMIT:
            raise WeightsFolderError(f"{path} is not a safetensors file (header length {length})")
        raw = fh.read(length)
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WeightsFolderError(f"{path} is not a safetensors file (bad header: {exc})") from exc
    if not isinstance(header, dict):
        raise WeightsFolderError(f"{path} is not a safetensors file (header is not an object)")
    infos: dict[str, TensorInfo] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(entry, dict) or "dtype" not in entry or "shape" not in entry:
            raise WeightsFolderError(f"{path}: entry {name!r} has no dtype or shape")
        infos[name] = TensorInfo(dtype=str(entry["dtype"]), shape=tuple(int(n) for n in entry["shape"]))
    return infos


def read_index(folder: str | Path) -> dict[str, TensorInfo]:
    """Every tensor of a model folder by name; a name in two files is an error."""
    index: dict[str, TensorInfo] = {}
    for path in weight_files(folder):
        for name, info in read_header(path).items():
            if name in index:
                raise WeightsFolderError(f"tensor {name!r} appears in more than one file of {folder}")
            index[name] = info
    return index


def is_tied(folder: str | Path) -> bool:
    """Whether the folder's config ties the output head to the input embedding."""
    config = Path(folder) / "config.json"
    if not config.is_file():
        return False
    data = _read_json(config)
    text = data.get("text_config")
    if not isinstance(text, dict):
        text = {}
    return bool(data.get("tie_word_embeddings", text.get("tie_word_embeddings", False)))


def check_compatible(new: dict[str, TensorInfo], base: dict[str, TensorInfo], tied: bool) -> None:
    """Raise unless ``new`` has exactly the served model's tensors: same names and shapes (dtypes may differ).

    With tied embeddings ``lm_head.weight`` may be present or absent on either side: loaders skip it and
    re-tie the head to the embedding.
    """
    optional = {TIED_HEAD} if tied else set()
    unknown = sorted(set(new) - set(base) - optional)
    missing = sorted(set(base) - set(new) - optional)
    reshaped = sorted(n for n in set(new) & set(base) if new[n].shape != base[n].shape)
    problems = []
    if unknown:
        problems.append(f"unknown tensors: {_some(unknown)}")
    if missing:
        problems.append(f"missing tensors: {_some(missing)}")
    if reshaped:
        problems.append(
            "other shapes: " + _some([f"{n} {list(new[n].shape)} (served: {list(base[n].shape)})" for n in reshaped])
        )
    if problems:
        raise WeightsFolderError("the weights do not fit the served model; " + "; ".join(problems))


def iter_tensors(folder: str | Path) -> Iterator[tuple[str, torch.Tensor]]:
    """``(name, tensor)`` for every tensor of the folder, file by file, loaded on CPU one at a time."""
    from safetensors import safe_open

    for path in weight_files(folder):
        with safe_open(str(path), framework="pt", device="cpu") as fh:
            for name in fh.keys():  # noqa: SIM118 - safe_open objects are not iterable
                yield name, fh.get_tensor(name)


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WeightsFolderError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise WeightsFolderError(f"{path} is not a JSON object")
    return data


def _some(items: list[str], limit: int = 5) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


__all__ = [
    "TensorInfo",
    "check_compatible",
    "is_tied",
    "iter_tensors",
    "read_header",
    "read_index",
    "weight_files",
]
