"""Errors of the inference side, under the trainer adapter's tree::

    verifiers.errors.Error
    └── trainer_adapter.errors.TrainerError
        └── InferenceError
            ├── WeightsFolderError     a weights folder the served model cannot take (also a UsageError)
            ├── WeightUpdateError      the engine failed while loading; the previous weights were put back
            └── InferenceServerError   the vLLM server did not start, or stopped answering
"""

from __future__ import annotations

from trainer_adapter.errors import TrainerError
from verifiers.errors import UsageError


class InferenceError(TrainerError):
    """Base of the inference side's errors."""


class WeightsFolderError(InferenceError, UsageError):
    """A weights folder is missing, empty, or its tensors do not match the served model's names and shapes."""


class WeightUpdateError(InferenceError):
    """Loading weights into the running engine failed; the weights it served before were loaded again."""


class InferenceServerError(InferenceError):
    """The inference server could not be started or reached."""


__all__ = ["InferenceError", "InferenceServerError", "WeightUpdateError", "WeightsFolderError"]
