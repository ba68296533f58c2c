"""Every error the Hub raises on purpose, in one tree, each with the HTTP status it answers with::

    HubError                        500 unless a subclass says otherwise
    ├── BadRequest                  400  malformed or invalid input (the message says what to fix)
    │   ├── FileExists              400  "File already exists" (twine's wording) or a reused filename
    │   └── TooLarge                400  upload over the size limit (400 so twine prints the message)
    │       └── BodyTooLarge        413  a JSON API body over its limit
    ├── NotAuthenticated            401  no credentials where they are needed (with WWW-Authenticate)
    ├── Forbidden                   403  credentials invalid, expired, revoked or not enough
    ├── NotFound                    404  unknown, private or deleted (never 401/403 on read paths)
    ├── Conflict                    409  the thing already exists (names of owners and projects)
    ├── NotAcceptable               406  no offered media type matches Accept
    ├── RateLimited                 429  too many writes or failed logins (with Retry-After)
    ├── BlobUnavailable             503  a file's stored bytes are missing or damaged: served to nobody
    └── StorageError                500  a blob could not be stored or read
        └── BlobMissing             500  (from a backend) no blob under the key; routes answer BlobUnavailable
"""

from __future__ import annotations


class HubError(Exception):
    """Base of the Hub's errors; ``status`` is the HTTP status it maps to."""

    status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(HubError):
    """Malformed or invalid input; the message says what to fix."""

    status = 400


class FileExists(BadRequest):
    """A filename is taken by other bytes, or was used before and deleted."""


class TooLarge(BadRequest):
    """The upload is larger than ``Settings.max_file_size``."""


class BodyTooLarge(TooLarge):
    """A JSON API request body over its limit (413: no twine to please there)."""

    status = 413


class NotAuthenticated(HubError):
    """Credentials are required and none were sent."""

    status = 401


class Forbidden(HubError):
    """The credentials are invalid, expired or revoked, or do not allow this."""

    status = 403


class NotFound(HubError):
    """Unknown, private to someone else, or deleted: all look the same from outside."""

    status = 404


class Conflict(HubError):
    """The owner or project already exists."""

    status = 409


class NotAcceptable(HubError):
    """None of the media types the server offers matches the request's Accept header."""

    status = 406


class RateLimited(HubError):
    """Too many requests of one kind; retry after ``retry_after`` seconds."""

    status = 429

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class BlobUnavailable(HubError):
    """A file is listed but its stored bytes are missing, or known not to match its sha256."""

    status = 503


class StorageError(HubError):
    """A blob could not be written or read."""


class BlobMissing(StorageError):
    """The storage has no blob under the key asked for."""


__all__ = [
    "BadRequest",
    "BlobMissing",
    "BlobUnavailable",
    "Conflict",
    "FileExists",
    "Forbidden",
    "HubError",
    "NotAcceptable",
    "NotAuthenticated",
    "NotFound",
    "RateLimited",
    "StorageError",
    "TooLarge",
]
