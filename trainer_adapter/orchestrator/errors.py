"""Errors of the orchestrator and of the run it belongs to, under the trainer adapter's tree::

    verifiers.errors.Error
    └── trainer_adapter.errors.TrainerError
        └── OrchestratorError
            ├── NoLearningSignalError   group after group gave the batch nothing (all dropped or failed)
            └── TrainerExitedError      the trainer process ended while the orchestrator still had batches to make
"""

from __future__ import annotations

from trainer_adapter.errors import TrainerError


class OrchestratorError(TrainerError):
    """Base of the orchestrator's errors."""


class NoLearningSignalError(OrchestratorError):
    """Too many groups in a row were dropped (equal rewards, difficulty filter) or failed; the batch cannot fill."""


class TrainerExitedError(OrchestratorError):
    """The trainer process exited before the run's last step; the message carries its log's last lines."""


__all__ = ["NoLearningSignalError", "OrchestratorError", "TrainerExitedError"]
