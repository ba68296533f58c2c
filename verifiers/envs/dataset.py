"""Turning dataset rows into rollout inputs, as the original formats them.

Rows carry ``question`` (or a ready ``prompt``), ``answer``, ``task`` and
``info``; formatting adds ``example_id`` (and the tuple era's ``id``) and
builds the chat prompt from the system prompt, few-shot messages and question.

An environment may also be given a *dataset builder* (0.3.0's ``DatasetBuilder``):
a callable taking no arguments that returns the dataset. It is called the first
time the dataset is used, not when the environment is built, so an evaluation
never builds a training split it does not read::

    env = vf.SingleTurnEnv(dataset=lambda: load_dataset("gsm8k", "main", split="train"), ...)
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Callable
from typing import Any, Iterable

from datasets import Dataset

from verifiers.messages import to_plain
from verifiers.types import DatasetBuilder


class LazyDataset(Dataset):
    """A :class:`datasets.Dataset` built from a :data:`DatasetBuilder` the first time it is read.

    It is a real ``Dataset`` to every caller: reading any of its data (``len``,
    iteration, ``select``, ``column_names``, ...) runs the builder once, applies
    ``prepare`` (the environment's formatting) and from then on behaves as the
    built dataset. :attr:`is_built` tells whether that has happened yet.

    Threads that read it for the first time together wait for a single build.
    """

    # Dataset.__init__ is skipped on purpose: there is no Arrow table until the builder runs.
    # Every data attribute is therefore missing until then, and __getattr__ (called only for
    # missing attributes) builds on the first such read.
    def __init__(self, builder: DatasetBuilder, prepare: Callable[[Dataset], Dataset]) -> None:
        _require_builder(builder)
        self._vf_builder: DatasetBuilder | None = builder
        self._vf_prepare: Callable[[Dataset], Dataset] | None = prepare
        self._vf_building = False
        self._vf_built = False
        self._vf_lock = threading.RLock()

    @property
    def is_built(self) -> bool:
        """Whether the builder has run (successfully) and its dataset is in place."""
        return bool(self.__dict__.get("_vf_built", False))

    def build(self) -> LazyDataset:
        """Run the builder now if it has not run yet; returns this dataset."""
        if not self.is_built:
            self._build()
        return self

    def __getattr__(self, name: str) -> Any:
        # Protocol probes (copy, pickle, numpy...) and private markers must never trigger a build.
        if name.startswith("__") or name.startswith("_vf_") or self.is_built:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self._build()
        return getattr(self, name)

    def _build(self) -> None:
        # Reentrant: a builder reading its own dataset (same thread) gets past the lock and is
        # caught by the _vf_building flag; another thread waits here until the build is over.
        with self._vf_lock:
            if self.is_built:  # built by the thread this one waited for
                return
            if self._vf_building:
                raise RuntimeError(f"the dataset builder {_name(self._vf_builder)} read the dataset it is building")
            builder, prepare = self._vf_builder, self._vf_prepare
            assert builder is not None and prepare is not None
            self._vf_building = True
            try:
                built = _guarded(f"the dataset builder {_name(builder)}", builder)
                _require_dataset(built, f"the dataset builder {_name(builder)}")
                ready = _guarded(f"formatting the dataset from {_name(builder)}", prepare, built)
            finally:
                self._vf_building = False
            self.__dict__.update(ready.__dict__)
            # The builder and formatter are done with; dropping them keeps the built dataset picklable.
            self._vf_builder = self._vf_prepare = None
            self._vf_built = True  # last: other threads treat the dataset as built from here on

    def __getstate__(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if key != "_vf_lock"}  # a lock does not copy

    def __setstate__(self, state: dict[str, Any]) -> LazyDataset:
        self.__dict__["_vf_lock"] = threading.RLock()
        if state.get("_vf_built"):
            return super().__setstate__(state)
        self.__dict__.update(state)  # Dataset.__setstate__ reads the data, which would build a copy
        return self

    def __del__(self) -> None:
        if self.is_built:  # Dataset.__del__ probes its table, which must not build one at collection
            super().__del__()

    def __repr__(self) -> str:
        if not self.is_built:
            return f"LazyDataset(not built yet: {_name(self._vf_builder)})"
        return super().__repr__()


def is_dataset_builder(value: Any) -> bool:
    """Whether ``value`` is a dataset builder (a callable) rather than a dataset."""
    return callable(value) and not isinstance(value, Dataset)


def as_given(dataset: Dataset | DatasetBuilder | None) -> Dataset | None:
    """``dataset`` unformatted (``message_type="completion"``): a builder becomes a
    :class:`LazyDataset` that only builds, anything else is returned as it is."""
    if is_dataset_builder(dataset):
        return LazyDataset(dataset, _unchanged)
    return dataset


def _unchanged(dataset: Dataset) -> Dataset:
    return dataset


def _require_builder(builder: Any) -> None:
    """Raise ``TypeError`` unless ``builder`` can be called without arguments."""
    if not callable(builder):
        raise TypeError(f"a dataset builder must be callable, got {type(builder).__name__}")
    try:
        signature = inspect.signature(builder)
    except (TypeError, ValueError):  # some builtins have no readable signature: checked when called
        return
    try:
        signature.bind()
    except TypeError:
        raise TypeError(
            f"a dataset builder is called without arguments, but {_name(builder)} takes {signature}"
        ) from None


def _guarded(what: str, step: Callable[..., Any], *args: Any) -> Any:
    """``step(*args)``, with an ``AttributeError`` it raises re-raised as a ``RuntimeError`` naming ``what``.

    The build runs inside ``__getattr__``, where an escaping ``AttributeError`` would read
    as "the dataset has no such attribute" and hide the real failure.
    """
    try:
        return step(*args)
    except AttributeError as exc:
        raise RuntimeError(f"{what} failed: {exc!r}") from exc


def _require_dataset(value: Any, source: str) -> None:
    if not isinstance(value, Dataset):
        raise TypeError(f"{source} returned {type(value).__name__}, not a datasets.Dataset")


def _name(builder: Any) -> str:
    return getattr(builder, "__qualname__", None) or repr(builder)


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


__all__ = ["DatasetBuilder", "LazyDataset", "as_given", "format_prompt", "format_dataset", "is_dataset_builder", "rows_from_inputs"]
