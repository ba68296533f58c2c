"""API token strings: ``vfh_<public id>_<secret>``. Only the SHA-256 of the secret is stored.

The public id finds the row without scanning; the secret is 256 random bits, so a plain
SHA-256 (not a slow password hash) is enough to make a stolen database useless for logins.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

PREFIX = "vfh"
_TOKEN = re.compile(rf"{PREFIX}_([0-9a-f]{{12}})_([A-Za-z0-9_-]{{43}})")


@dataclass(frozen=True)
class TokenParts:
    """A token split into the id stored in clear and the secret stored hashed."""

    public_id: str
    secret: str

    def __str__(self) -> str:
        return f"{PREFIX}_{self.public_id}_{self.secret}"


def new_token() -> TokenParts:
    """A fresh random token."""
    return TokenParts(secrets.token_hex(6), secrets.token_urlsafe(32))


def parse_token(text: str) -> TokenParts | None:
    """Split a token string; ``None`` if it is not shaped like one of ours."""
    match = _TOKEN.fullmatch(text.strip())
    return TokenParts(match[1], match[2]) if match else None


def hash_secret(secret: str) -> str:
    """The stored form of a secret."""
    return hashlib.sha256(secret.encode()).hexdigest()


def secret_matches(secret: str, stored_sha256: str) -> bool:
    """Constant-time comparison of a presented secret with the stored hash."""
    return hmac.compare_digest(hash_secret(secret), stored_sha256)
