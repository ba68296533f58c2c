"""Who is looking at a page: an ``Authorization`` header, or an API token kept in a cookie after sign-in.

The web UI has no passwords: signing in means pasting an API token (a read token is enough to
see one's private environments). The cookie is HttpOnly and SameSite=Strict, so page scripts
cannot read it and other sites cannot make the browser send it. A token that stops working
(revoked, expired) simply reads as anonymous.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response

from hub_server.auth.principal import Principal, authenticate
from hub_server.context import hub_of
from hub_server.errors import Forbidden

COOKIE = "vf_hub_token"
_MAX_AGE_S = 30 * 24 * 3600


def web_principal(request: Request) -> Principal | None:
    """The signed-in principal, or ``None`` for anonymous visitors; remembered on ``request.state``."""
    hub = hub_of(request)
    principal = hub.optional_principal(request)
    token = request.cookies.get(COOKIE)
    if principal is None and token:
        try:
            with hub.db.read() as session:
                principal = authenticate(session, token)
        except Forbidden:
            principal = None
    request.state.user_name = principal.user_name if principal else None
    return principal


def sign_in(request: Request, token: str) -> Principal:
    """Check a token (failed attempts count against the address's and the token id's limits)."""
    return hub_of(request).authenticate_token(request, token.strip())


def remember(response: Response, request: Request, token: str) -> None:
    """Keep the token in the browser for later pages."""
    response.set_cookie(COOKIE, token.strip(), max_age=_MAX_AGE_S, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path="/")


def forget(response: Response) -> None:
    """Drop the token from the browser."""
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
