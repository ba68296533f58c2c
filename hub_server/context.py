"""What one app instance holds: settings, database, storage, rate limiters, caches (no module globals)."""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import Request

from hub_server.api.blob_cache import SmallBlobs
from hub_server.api.read_cache import ReadCache
from hub_server.auth.credentials import token_from_header
from hub_server.auth.principal import Principal, authenticate
from hub_server.db.database import Database
from hub_server.errors import Forbidden, NotAuthenticated
from hub_server.ratelimit import RateLimiter
from hub_server.settings import Settings
from hub_server.storage import Storage


@dataclass
class Hub:
    """The state of one Hub app; routes reach it as ``request.app.state.hub``."""

    settings: Settings
    db: Database
    storage: Storage
    writes: RateLimiter = field(init=False)
    failed_auth: RateLimiter = field(init=False)
    reads: ReadCache = field(init=False)
    blobs: SmallBlobs = field(default_factory=SmallBlobs)

    def __post_init__(self) -> None:
        self.writes = RateLimiter(self.db, "writes", self.settings.write_rate_per_minute)
        self.failed_auth = RateLimiter(self.db, "failed_auth", self.settings.failed_auth_per_minute)
        self.reads = ReadCache(self.db, self.settings.read_cache_seconds)

    def _authenticate(self, request: Request) -> Principal | None:
        address = request.client.host if request.client else "unknown"
        header = request.headers.get("authorization")
        if not header:
            return None
        try:
            with self.db.read() as session:  # one transaction for the budget and the token
                # the budget first: a client over it is refused before its header is even parsed
                self.failed_auth.check(address, "failed authentications", session)
                token = token_from_header(header)
                assert token is not None  # a header was present
                return authenticate(session, token)
        except Forbidden:
            self.failed_auth.hit(address, "failed authentications")
            raise

    def principal(self, request: Request) -> Principal:
        """The caller, who must authenticate (401 without credentials, 403 with bad ones)."""
        principal = self._authenticate(request)
        if principal is None:
            raise NotAuthenticated("authentication required: use the username __token__ and an API token")
        return principal

    def optional_principal(self, request: Request) -> Principal | None:
        """The caller if valid credentials came, else anonymous.

        Read paths never answer 401/403 (uv gives up on an index that does): bad credentials
        there just read as anonymous, so a private project answers 404.
        """
        try:
            return self._authenticate(request)
        except Forbidden:
            return None

    def limit_writes(self, principal: Principal) -> None:
        """Count one write by this principal's user against the per-minute budget."""
        self.writes.hit(f"user:{principal.user_id}", "writes")


def hub_of(request: Request) -> Hub:
    """The :class:`Hub` of the app serving ``request``."""
    hub: Hub = request.app.state.hub
    return hub
