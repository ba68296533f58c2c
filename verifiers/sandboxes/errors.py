"""Sandbox errors: one branch of the SDK's tree, under :class:`verifiers.errors.SandboxError`.

The names follow the hosted client public environments already catch, so an
``except CommandTimeoutError`` written for it works here::

    SandboxError                       (verifiers.errors)
    ├── SandboxNotRunningError         unknown id, deleted, or its agent died
    ├── SandboxTimeoutError            not ready in time, or its lifetime ran out
    ├── SandboxOOMError                the sandbox itself was killed for memory
    ├── CommandTimeoutError            one command outlived its timeout (``.response`` has its output)
    ├── SandboxFileNotFoundError       no such file (also a FileNotFoundError)
    ├── SandboxFileTooLargeError       a file or upload is over the limit
    ├── SandboxPathError               a path leaves the sandbox's files or crosses a symlink
    └── SandboxUnavailableError        this machine cannot run the requested isolation

A command that is OOM-killed inside a live sandbox is not an error: its
``CommandResponse`` says ``oom_killed=True``, as reward code needs to tell it
apart from a timeout and a plain non-zero exit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers.errors import SandboxError

if TYPE_CHECKING:
    from verifiers.sandboxes.models import CommandResponse


class SandboxNotRunningError(SandboxError):
    """The sandbox does not exist, was deleted, or stopped answering."""


class SandboxTimeoutError(SandboxError):
    """The sandbox did not become ready in time, or its lifetime (``timeout_minutes``) ran out."""


class SandboxOOMError(SandboxError):
    """The sandbox was lost because its processes ran out of memory."""


class CommandTimeoutError(SandboxError):
    """A command ran past its timeout and was killed, with everything it started.

    ``response`` holds what it printed until then (``timed_out=True``).
    """

    def __init__(self, message: str, response: CommandResponse | None = None, timeout: float | None = None) -> None:
        super().__init__(message)
        self.response = response
        self.timeout = timeout


class SandboxFileNotFoundError(SandboxError, FileNotFoundError):
    """The file asked for does not exist in the sandbox."""


class SandboxFileTooLargeError(SandboxError):
    """A file is larger than the limit of the call, or an upload does not fit the sandbox's disk."""


class SandboxPathError(SandboxError, PermissionError):
    """A path is outside ``/workspace`` and ``/tmp``, contains ``..``, or crosses a symlink; or a request's
    ``image_dir`` is not a readable directory or tar archive on the host."""


class SandboxUnavailableError(SandboxError):
    """The backend cannot provide the requested isolation on this machine; the message says why and what to do."""


__all__ = [
    "SandboxError",
    "SandboxNotRunningError",
    "SandboxTimeoutError",
    "SandboxOOMError",
    "CommandTimeoutError",
    "SandboxFileNotFoundError",
    "SandboxFileTooLargeError",
    "SandboxPathError",
    "SandboxUnavailableError",
]
