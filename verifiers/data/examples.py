"""Example datasets by name, from files shipped in the package or supplied locally.

Nothing is ever downloaded. Bundled (see ``files/LICENSES.md``): GSM8K train and
test, MATH-500, the MMLU physics, chemistry and biology subjects, HumanEval.
The other names classic verifiers knew load from a local JSONL copy, passed as
``path=`` or found under ``$VF_DATA_DIR/<name>/<split>.jsonl``.
"""

from __future__ import annotations

import difflib
import gzip
import io
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import IO

import numpy as np
from datasets import Dataset

from verifiers.data import formats
from verifiers.data.formats import Converter, Row
from verifiers.errors import UsageError

DATA_DIR_ENV = "VF_DATA_DIR"


@dataclass(frozen=True)
class _Bundled:
    file: str
    """Path under ``verifiers/data/files``."""
    split_value: str | None = None
    """Keep only rows whose ``split`` field equals this (files holding several splits)."""


@dataclass(frozen=True)
class _Source:
    convert: Converter
    default_split: str
    published_as: str
    bundled: dict[str, _Bundled] = field(default_factory=dict)
    keep: Callable[[Row], bool] | None = None


def _science(subject: str) -> _Source:
    file = f"science/{subject}.jsonl.gz"
    splits = {"test": "test", "val": "val", "validation": "val", "dev": "dev"}
    return _Source(
        formats.mmlu,
        "test",
        f"MMLU ({subject} subjects)",
        {name: _Bundled(file, value) for name, value in splits.items()},
    )


# How rows of a user's own file (``path=`` without a name) are read.
_LOCAL_FILE = _Source(formats.plain, "train", "a local file")
_MATH500 = {"test": _Bundled("math500/test.jsonl.gz")}
_PRIME_CODE_PREFIX = "Solve the following coding problem using the programming language python:"

SOURCES: dict[str, _Source] = {
    "gsm8k": _Source(
        formats.gsm8k,
        "test",
        "openai/gsm8k",
        {"train": _Bundled("gsm8k/train.jsonl.gz"), "test": _Bundled("gsm8k/test.jsonl.gz")},
    ),
    # Only the MATH-500 test subset is bundled; "math" names the same file.
    "math": _Source(formats.math_problem, "test", "hendrycks/math (MATH)", _MATH500),
    "math500": _Source(formats.math_problem, "test", "HuggingFaceH4/MATH-500", _MATH500),
    "mmlu_physics": _science("physics"),
    "mmlu_chemistry": _science("chemistry"),
    "mmlu_biology": _science("biology"),
    "humaneval": _Source(
        formats.humaneval, "test", "openai/openai_humaneval", {"test": _Bundled("humaneval/HumanEval.jsonl.gz")}
    ),
    "aime2024": _Source(formats.integer_answer, "train", "HuggingFaceH4/aime_2024"),
    "aime2025": _Source(formats.integer_answer, "test", "opencompass/AIME2025"),
    "amc2023": _Source(formats.plain, "train", "knoveleng/AMC-23"),
    "gpqa_diamond": _Source(formats.gpqa, "train", "Idavidrein/gpqa (gpqa_diamond)"),
    "gpqa_main": _Source(formats.gpqa, "train", "Idavidrein/gpqa (gpqa_main)"),
    "mmlu": _Source(formats.mmlu, "dev", "cais/mmlu (all)"),
    "mmlu_pro": _Source(formats.mmlu, "validation", "TIGER-Lab/MMLU-Pro"),
    "openbookqa": _Source(formats.openbookqa, "train", "allenai/openbookqa (main)"),
    "openrs": _Source(formats.plain, "train", "knoveleng/open-rs"),
    "openrs_easy": _Source(formats.plain, "train", "knoveleng/open-rs", keep=lambda r: r.get("level") == "Easy"),
    "openrs_hard": _Source(formats.plain, "train", "knoveleng/open-rs", keep=lambda r: r.get("level") == "Hard"),
    "prime_code": _Source(
        formats.code_verification,
        "train",
        "PrimeIntellect/verifiable-coding-problems",
        keep=lambda r: str(r.get("prompt", "")).startswith(_PRIME_CODE_PREFIX),
    ),
}


def example_dataset_names(bundled_only: bool = False) -> list[str]:
    """The names :func:`load_example_dataset` knows, sorted; optionally only those with bundled data."""
    return sorted(name for name, source in SOURCES.items() if source.bundled or not bundled_only)


def load_example_dataset(
    name: str | None = None,
    split: str | None = None,
    n: int | None = None,
    seed: int = 0,
    path: str | os.PathLike[str] | None = None,
) -> Dataset:
    """Load an example dataset with ``question`` and ``answer`` columns (``info`` for some sets).

    Args:
        name: a known name (see :func:`example_dataset_names`); defaults to ``"gsm8k"``
            unless ``path`` is given, in which case rows need ``question`` (or
            ``problem``/``prompt``) and ``answer``, and a folder's default split
            is ``"train"``. ``"math"`` and ``"math500"`` both
            load the bundled MATH-500 test set.
        split: defaults per dataset (``"test"`` for the bundled ones).
        n: if positive, a random subset of at most ``n`` rows, drawn with ``seed``
            exactly as ``Dataset.shuffle(seed=seed).select(range(n))`` would.
        seed: seed for that subset (and for option order of GPQA rows).
        path: a local ``.jsonl``/``.jsonl.gz`` file, or a folder holding
            ``<split>.jsonl``. Otherwise ``$VF_DATA_DIR/<name>/<split>.jsonl`` is
            used when it exists, then the bundled file.

    Raises:
        UsageError: unknown name or split, data not bundled and not supplied, bad rows.

    >>> ds = load_example_dataset("gsm8k", n=2)
    >>> ds.column_names, len(ds)
    (['question', 'answer'], 2)
    """
    _check_args(name, split, n, seed, path)
    key: str | None
    if name is None and path is not None:
        key, source = None, _LOCAL_FILE
    else:
        key = _canonical_name(name or "gsm8k")
        source = SOURCES[key]
    split = split if split is not None else source.default_split
    rows, split_value = _locate_rows(key, source, split, path)
    indexed = [
        (i, row)
        for i, row in enumerate(rows)
        if (split_value is None or row.get("split") == split_value) and (source.keep is None or source.keep(row))
    ]
    if not indexed:
        raise UsageError(f"no rows found for {key or path!r} (split {split!r})")
    if n is not None and n > 0:
        order = np.random.default_rng(seed).permutation(len(indexed))
        indexed = [indexed[j] for j in order[:n]]
    return Dataset.from_list([source.convert(row, i, seed) for i, row in indexed])


def _check_args(name: object, split: object, n: object, seed: object, path: object) -> None:
    for label, value in (("name", name), ("split", split)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{label} must be a str or None, got {type(value).__name__}")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int)):
        raise TypeError(f"n must be an int or None, got {type(n).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str, a path or None, got {type(path).__name__}")


def _canonical_name(name: str) -> str:
    key = name.strip().lower().replace("-", "_")
    if key in SOURCES:
        return key
    close = difflib.get_close_matches(key, SOURCES, n=3)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise UsageError(f"unknown example dataset {name!r}.{hint} Known names: {', '.join(example_dataset_names())}.")


def _locate_rows(
    key: str | None, source: _Source, split: str, path: str | os.PathLike[str] | None
) -> tuple[list[Row], str | None]:
    """The raw rows, and the ``split`` value to filter on (bundled multi-split files only)."""
    if path is not None:
        return _read_jsonl_file(_split_file(Path(path), split)), None
    data_dir = os.environ.get(DATA_DIR_ENV)
    if data_dir and key is not None:
        for candidate in (Path(data_dir) / key / f"{split}.jsonl", Path(data_dir) / key / f"{split}.jsonl.gz"):
            if candidate.is_file():
                return _read_jsonl_file(candidate), None
    bundled = source.bundled.get(split)
    if bundled is not None:
        with (resources.files("verifiers.data") / "files" / bundled.file).open("rb") as raw:
            return _read_jsonl(raw, bundled.file), bundled.split_value
    local_hint = (
        f"Pass a local JSONL copy with load_example_dataset({key!r}, split={split!r}, path='...jsonl') "
        f"or set {DATA_DIR_ENV} to a folder holding {key}/{split}.jsonl."
    )
    if source.bundled:
        raise UsageError(
            f"split {split!r} of {key!r} is not bundled (bundled splits: {', '.join(sorted(source.bundled))}). "
            + local_hint
        )
    raise UsageError(
        f"the {key!r} data ({source.published_as}) is not bundled with verifiers, "
        f"and nothing is downloaded at run time. " + local_hint
    )


def _split_file(path: Path, split: str) -> Path:
    if path.is_dir():
        for candidate in (path / f"{split}.jsonl", path / f"{split}.jsonl.gz"):
            if candidate.is_file():
                return candidate
        raise UsageError(f"folder {str(path)!r} has no {split}.jsonl or {split}.jsonl.gz")
    if not path.is_file():
        raise UsageError(f"data file {str(path)!r} does not exist")
    return path


def _read_jsonl_file(path: Path) -> list[Row]:
    with path.open("rb") as raw:
        return _read_jsonl(raw, str(path))


def _read_jsonl(raw: IO[bytes], label: str) -> list[Row]:
    stream = gzip.GzipFile(fileobj=raw) if label.endswith(".gz") else raw
    rows: list[Row] = []
    for number, line in enumerate(io.TextIOWrapper(stream, encoding="utf-8"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise UsageError(f"{label}:{number} is not valid JSON: {e.msg}") from None
        if not isinstance(row, dict):
            raise UsageError(f"{label}:{number} must be a JSON object, got {type(row).__name__}")
        rows.append(row)
    return rows
