"""Errors the trainer adapter raises on purpose, under the SDK's tree::

    verifiers.errors.Error
    └── TrainerError
        ├── TrainerConfigError   a bad config file, override or model folder (also a UsageError)
        │   └── RunFolderError   the output folder does not fit the command (nothing to resume, another
        │                        config's run, a run already there without --resume)
        └── CheckpointError      a checkpoint cannot be written or read back
"""

from __future__ import annotations

from verifiers.errors import Error, UsageError


class TrainerError(Error):
    """Base of the trainer adapter's errors."""


class TrainerConfigError(TrainerError, UsageError):
    """A config file, a command-line override or a model folder is wrong; the message says how."""


class RunFolderError(TrainerConfigError):
    """``vf-train rl``'s output folder does not fit the command; nothing was started (exit status 2)."""


class CheckpointError(TrainerError):
    """A checkpoint could not be written, found or loaded."""


__all__ = ["CheckpointError", "RunFolderError", "TrainerConfigError", "TrainerError"]
