"""Errors of the weight broadcast, under the trainer adapter's tree::

    verifiers.errors.Error
    └── trainer_adapter.errors.TrainerError
        └── BroadcastError
            ├── ManifestError           a manifest that is not one (bad JSON, shards that do not tile the files)
            ├── CorruptCheckpointError  no relay holds a copy of a shard (or the whole) that matches its sha256
            ├── StaleVersionError       a version no newer than the one already loaded (also a UsageError)
            └── RelayError              no relay took an upload, or a shard stayed missing past its deadline
"""

from __future__ import annotations

from trainer_adapter.errors import TrainerError
from verifiers.errors import UsageError


class BroadcastError(TrainerError):
    """Base of the weight broadcast's errors."""


class ManifestError(BroadcastError):
    """A manifest is malformed or does not describe its checkpoint consistently."""


class CorruptCheckpointError(BroadcastError):
    """A checkpoint whose bytes do not match its manifest on any relay; it is discarded, never loaded."""


class StaleVersionError(BroadcastError, UsageError):
    """A version older than (or equal to) the one the node already serves was asked for; it is refused."""


class RelayError(BroadcastError):
    """The relays could not take or serve a checkpoint (all down, or a shard missing past its deadline)."""


__all__ = ["BroadcastError", "CorruptCheckpointError", "ManifestError", "RelayError", "StaleVersionError"]
