"""Dataset builders (0.3.0's ``DatasetBuilder``): a no-argument callable that returns the dataset.

It is called the first time the dataset is used, not when the environment is built, so an
evaluation never builds a training split it does not read::

    env = vf.SingleTurnEnv(dataset=lambda: load_dataset("gsm8k", "main", split="train"), ...)

:class:`LazyDataset` stands in for the dataset until then; :mod:`verifiers.envs.dataset`
formats what it builds.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any, TypeGuard

from datasets import Dataset

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


def is_dataset_builder(value: object) -> TypeGuard[DatasetBuilder]:
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


__all__ = ["LazyDataset", "as_given", "is_dataset_builder"]
