"""Sandboxes: isolated places to run the code a model wrote.

``AsyncSandboxClient`` is the API (create, wait, execute, files, delete);
backends do the work: the local one (bubblewrap, the default) here, others
behind the same :class:`SandboxBackend` seam. See ``docs/sandboxes.md``.
"""

from __future__ import annotations

from verifiers.sandboxes.backend import SandboxBackend
from verifiers.sandboxes.client import AsyncSandboxClient, default_backend
from verifiers.sandboxes.errors import (
    CommandTimeoutError,
    SandboxError,
    SandboxFileNotFoundError,
    SandboxFileTooLargeError,
    SandboxNotRunningError,
    SandboxOOMError,
    SandboxPathError,
    SandboxTimeoutError,
    SandboxUnavailableError,
)
from verifiers.sandboxes.local.backend import LocalBackend
from verifiers.sandboxes.local.config import LocalBackendConfig
from verifiers.sandboxes.models import CommandResponse, CreateSandboxRequest, FileContent, Sandbox, SandboxStatus

__all__ = [
    "AsyncSandboxClient",
    "SandboxBackend",
    "LocalBackend",
    "LocalBackendConfig",
    "default_backend",
    "CreateSandboxRequest",
    "Sandbox",
    "SandboxStatus",
    "CommandResponse",
    "FileContent",
    "SandboxError",
    "CommandTimeoutError",
    "SandboxNotRunningError",
    "SandboxTimeoutError",
    "SandboxOOMError",
    "SandboxFileNotFoundError",
    "SandboxFileTooLargeError",
    "SandboxPathError",
    "SandboxUnavailableError",
]
