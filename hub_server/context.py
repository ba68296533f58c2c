"""What one app instance holds: settings, database, storage, rate limiters, caches (no module globals)."""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import Request

from hub_server.api.blob_cache import SmallBlobs
from hub_server.api.read_cache import ReadCache
from hub_server.auth.credentials import token_from_header
from hub_server.auth.principal import Principal, authenticate
from hub_server.auth.tokens import parse_token
from hub_server.db.database import Database
from hub_server.errors import Forbidden, NotAuthenticated
from hub_server.metrics import AuthFailure, HubMetrics
from hub_server.ratelimit import RateLimiter
from hub_server.settings import Settings
from hub_server.storage import Storage


@dataclass
class Hub:
    """The state of one Hub app; routes reach it as ``request.app.state.hub``."""

    settings: Settings
    db: Database
    storage: Storage
    metrics: HubMetrics = field(default_factory=HubMetrics)
    writes: RateLimiter = field(init=False)
    failed_auth: RateLimiter = field(init=False)
    reads: ReadCache = field(init=False)
    blobs: SmallBlobs = field(default_factory=SmallBlobs)

    def __post_init__(self) -> None:
        self.writes = RateLimiter(self.db, "writes", self.settings.write_rate_per_minute)
        self.failed_auth = RateLimiter(self.db, "failed_auth", self.settings.failed_auth_per_minute)
        self.reads = ReadCache(self.db, self.settings.read_cache_seconds)

    def authenticate_token(self, request: Request, token: str) -> Principal:
        """The principal ``token`` speaks for; a failure counts against the limits (see :meth:`principal`).

        Raises:
            Forbidden: the token is not valid (``RateLimited`` instead once a budget is used up).
        """
        try:
            with self.db.read() as session:
                return authenticate(session, token)
        except Forbidden:
            self._count_failure(request, token, "invalid")
            raise

    def _count_failure(self, request: Request, token: str | None, reason: AuthFailure) -> None:
        self.metrics.count_auth_failure(reason)
        # Two budgets: the client's address (one source guessing many tokens) and the token id (many
        # sources, e.g. behind a trusted proxy, hammering one id). Only failures are counted and only
        # failures are refused: a valid token is always accepted, whatever its address has done.
        keys = [f"address:{client_address(request)}"]
        parts = parse_token(token) if token else None
        if parts is not None:
            keys.append(f"token:{parts.public_id}")
        self.failed_auth.hit_all(keys, "failed authentications")

    def principal(self, request: Request) -> Principal:
        """The caller, who must authenticate (401 without credentials, 403 with bad ones).

        A failed authentication counts against the client address's and the token id's budgets
        (``failed_auth_per_minute`` each); once either is used up, failures answer 429 instead of 403.
        """
        header = request.headers.get("authorization")
        if not header:
            self.metrics.count_auth_failure("missing")
            raise NotAuthenticated("authentication required: use the username __token__ and an API token")
        try:
            token = token_from_header(header)
        except Forbidden:
            self._count_failure(request, None, "malformed")
            raise
        assert token is not None  # a header was present
        return self.authenticate_token(request, token)

    def optional_principal(self, request: Request) -> Principal | None:
        """The caller if valid credentials came, else anonymous.

        Read paths never answer 401/403 (uv gives up on an index that does): bad credentials
        there just read as anonymous, so a private project answers 404. They are not counted
        against any limit either: a stale token in a user's keyring must not lock them (or their
        address) out of public reads.
        """
        header = request.headers.get("authorization")
        if not header:
            return None
        try:
            token = token_from_header(header)
            assert token is not None  # a header was present
            with self.db.read() as session:
                return authenticate(session, token)
        except Forbidden:
            self.metrics.count_auth_failure("read_as_anonymous")
            return None

    def limit_writes(self, principal: Principal) -> None:
        """Count one write by this principal's user against the per-minute budget."""
        self.writes.hit(f"user:{principal.user_id}", "writes")


def client_address(request: Request) -> str:
    """The client's address: the connecting peer, or what a trusted proxy forwarded (``forwarded_allow_ips``)."""
    return request.client.host if request.client else "unknown"


def hub_of(request: Request) -> Hub:
    """The :class:`Hub` of the app serving ``request``."""
    hub: Hub = request.app.state.hub
    return hub
