"""Turning dataset rows into rollout inputs, as the original formats them.

Rows carry ``question`` (or a ready ``prompt``), ``answer``, ``task`` and
``info``; formatting adds ``example_id`` (and the tuple era's ``id``) and
builds the chat prompt from the system prompt, few-shot messages and question.
A dataset may also be a *dataset builder* (see :mod:`verifiers.envs.dataset_builder`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from datasets import Dataset

from verifiers.envs.dataset_builder import LazyDataset, is_dataset_builder
from verifiers.messages import to_plain
from verifiers.types import DatasetBuilder


def format_prompt(
    prompt_str: str, system_prompt: str | None = None, few_shot: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """``[system?] + few_shot + [user]`` as plain chat messages."""
    messages: list[dict[str, Any]] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    messages.extend(to_plain(few_shot or []))
    messages.append({"role": "user", "content": prompt_str})
    return messages


def format_dataset(
    dataset: Dataset | DatasetBuilder,
    system_prompt: str | None = None,
    few_shot: list[dict[str, Any]] | None = None,
    question_key: str = "question",
    answer_key: str = "answer",
) -> Dataset:
    """Add ``example_id``/``id`` and a chat ``prompt`` column (from ``question_key``) where missing.

    ``dataset`` may be a :data:`DatasetBuilder`; the result is then a :class:`LazyDataset`
    that builds and formats it when first read.
    """
    if is_dataset_builder(dataset):
        return LazyDataset(
            dataset, lambda built: format_dataset(built, system_prompt, few_shot, question_key, answer_key)
        )
    if not isinstance(dataset, Dataset):
        raise TypeError(
            f"a dataset must be a datasets.Dataset or a callable that returns one, got {type(dataset).__name__}"
        )
    columns = set(dataset.column_names)
    if "example_id" not in columns:
        ids = dataset["id"] if "id" in columns and _all_ints(dataset["id"]) else range(len(dataset))
        dataset = dataset.add_column("example_id", list(ids))
    if "id" not in dataset.column_names:
        dataset = dataset.add_column("id", list(dataset["example_id"]))
    if answer_key != "answer" and answer_key in columns:
        dataset = dataset.map(lambda row: {"answer": row[answer_key]})
    if "prompt" not in columns:
        if question_key not in columns:
            raise ValueError(
                f"dataset needs a 'prompt' column or a '{question_key}' column; it has {sorted(columns)}"
            )
        dataset = dataset.map(
            lambda row: {"prompt": format_prompt(row[question_key], system_prompt, few_shot)},
        )
    elif system_prompt:
        dataset = dataset.map(lambda row: {"prompt": _with_system(row["prompt"], system_prompt)})
    return dataset


def _with_system(prompt: Any, system_prompt: str) -> Any:
    if isinstance(prompt, list) and not (prompt and prompt[0].get("role") == "system"):
        return [{"role": "system", "content": system_prompt}, *prompt]
    return prompt


def _all_ints(values: Iterable[Any]) -> bool:
    return all(isinstance(v, int) for v in values)


def rows_from_inputs(inputs: Any) -> list[dict[str, Any]]:
    """Accept a Dataset, a dict of columns, a list of rows or a GenerateInputs model; return rows.

    Missing columns get the original's defaults: ``answer=""``, ``task="default"``,
    ``info={}``; an ``info`` stored as a JSON string is decoded.
    """
    if hasattr(inputs, "model_dump") and not isinstance(inputs, dict):
        inputs = {k: v for k, v in inputs.model_dump().items() if v is not None}
    if isinstance(inputs, Dataset):
        rows = list(inputs)
    elif isinstance(inputs, dict):
        if "prompt" not in inputs:
            raise ValueError("inputs need a 'prompt' column")
        n = len(inputs["prompt"])
        rows = [{k: v[i] for k, v in inputs.items() if v is not None and len(v) == n} for i in range(n)]
    else:
        rows = [dict(r) for r in inputs]
    for index, row in enumerate(rows):
        if "prompt" not in row:
            raise ValueError(f"input row {index} has no 'prompt'")
        row.setdefault("answer", "")
        row.setdefault("task", "default")
        info = row.get("info")
        if isinstance(info, str):
            info = json.loads(info) if info else {}
        row["info"] = dict(info or {})
        row.setdefault("example_id", row.get("id", index))
    return rows


__all__ = ["DatasetBuilder", "format_prompt", "format_dataset", "rows_from_inputs"]
