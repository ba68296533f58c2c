"""Authentication (tokens, credentials) and authorisation (:class:`Principal`)."""

from hub_server.auth.credentials import TOKEN_USERNAME, token_from_header
from hub_server.auth.principal import PERMISSIONS, PUBLISH, READ, Principal, authenticate, can_read
from hub_server.auth.tokens import TokenParts, hash_secret, new_token, parse_token

__all__ = [
    "PERMISSIONS",
    "PUBLISH",
    "READ",
    "TOKEN_USERNAME",
    "Principal",
    "TokenParts",
    "authenticate",
    "can_read",
    "hash_secret",
    "new_token",
    "parse_token",
    "token_from_header",
]
