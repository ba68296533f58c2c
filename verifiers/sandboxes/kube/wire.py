"""What executor and client agree on: routes, per-pod tokens, and typed errors carried over HTTP."""

from __future__ import annotations

import hashlib
import hmac

from verifiers.errors import SandboxError
from verifiers.sandboxes import errors as sandbox_errors

API = "/v1/sandboxes"

# Errors that cross the wire by class name; anything else arrives as a plain SandboxError.
ERRORS: dict[str, type[Exception]] = {
    name: getattr(sandbox_errors, name) for name in sandbox_errors.__all__
} | {"ValueError": ValueError}

STATUS: dict[str, int] = {
    "SandboxNotRunningError": 404, "SandboxFileNotFoundError": 404, "SandboxPathError": 403,
    "SandboxFileTooLargeError": 413, "SandboxTimeoutError": 504, "CommandTimeoutError": 504,
    "SandboxOOMError": 507, "SandboxUnavailableError": 503, "ValueError": 400,
}


def pod_token(master_key: str, pod_name: str) -> str:
    """The bearer token of one executor pod: an HMAC of its name, so no two pods share one."""
    return hmac.new(master_key.encode(), pod_name.encode(), hashlib.sha256).hexdigest()


def error_body(error: Exception) -> tuple[int, dict[str, str]]:
    name = type(error).__name__ if type(error).__name__ in ERRORS else "SandboxError"
    return STATUS.get(name, 500), {"error": name, "message": str(error)}


def raise_error(body: dict[str, str]) -> None:
    """Raise the error an executor reported, as the same class."""
    raise ERRORS.get(body.get("error", ""), SandboxError)(body.get("message", "executor error"))


__all__ = ["API", "ERRORS", "STATUS", "pod_token", "error_body", "raise_error"]
