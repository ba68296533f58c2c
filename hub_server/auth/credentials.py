"""Reading the token out of an ``Authorization`` header: Basic ``__token__`` (twine, pip) or Bearer (CLI)."""

from __future__ import annotations

import base64
import binascii

from hub_server.errors import Forbidden

TOKEN_USERNAME = "__token__"


def token_from_header(header: str | None) -> str | None:
    """The token in an ``Authorization`` header; ``None`` when there is no header.

    Raises:
        Forbidden: the header is malformed or names a user other than ``__token__``.
    """
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    scheme = scheme.lower()
    if scheme == "bearer" and value.strip():
        return value.strip()
    if scheme == "basic":
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise Forbidden("malformed Basic credentials") from None
        username, sep, password = decoded.partition(":")
        if not sep or username != TOKEN_USERNAME:
            raise Forbidden(f"log in with the username {TOKEN_USERNAME!r} and an API token as the password")
        return password
    raise Forbidden("unsupported Authorization scheme: use Basic (__token__:TOKEN) or Bearer TOKEN")
