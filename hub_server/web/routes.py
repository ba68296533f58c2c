"""The web UI's pages: the environment list and search, an owner's page, an environment's page, sign-in.

Pages are server-rendered and read-only; what a visitor sees is decided by the same catalogue
rules as the package index (a private or quarantined environment is "not found" for others).
Registered after every other router: ``/{owner}`` and ``/{owner}/{name}`` would otherwise
shadow fixed paths such as ``/simple/`` and ``/{owner}/simple/``.
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.exc import SQLAlchemyError

from hub_server.context import hub_of
from hub_server.errors import BadRequest, Forbidden, NotFound, RateLimited
from hub_server.names import check_version
from hub_server.services.eval_rollouts import SHOWS, Show
from hub_server.services.listing import SORTS, list_environments
from hub_server.services.owners import owner_profile
from hub_server.web import session as web_session
from hub_server.web.eval_views import eval_page, rollout_page
from hub_server.web.templating import page
from hub_server.web.views import environment_page

router = APIRouter(include_in_schema=False)
log = logging.getLogger(__name__)

PAGE_SIZE = 30
TextQuery = Annotated[str, Query(max_length=200)]
PageNumber = Annotated[int, Query(alias="page", ge=1, le=10_000)]


def _pages(page_number: int, total: int) -> dict[str, int]:
    return {"page_number": page_number, "pages": max(1, -(-total // PAGE_SIZE))}


def _hub_url(request: Request) -> str:
    hub = hub_of(request)
    return (hub.settings.public_url or str(request.base_url)).rstrip("/")


def _not_found(request: Request, what: str) -> HTMLResponse:
    return page(request, "not_found.html", {"what": what}, status=404)


def _flush_downloads(request: Request) -> None:
    """Write this worker's pending download counts, so a page shows them at once."""
    try:
        request.app.state.downloads.flush()
    except SQLAlchemyError:
        # A page is worth more than a fresh count: the tally is kept for the next flush.
        log.exception("could not write download counts; showing the page without them")


@router.get("/", response_class=HTMLResponse)
@router.get("/search", response_class=HTMLResponse)
def environments(request: Request, q: TextQuery = "", tag: TextQuery = "", sort: str = "downloads",
                 page_number: PageNumber = 1) -> HTMLResponse:
    """Every environment the visitor may see, filtered by text and tag."""
    hub = hub_of(request)
    principal = web_session.web_principal(request)
    _flush_downloads(request)
    with hub.db.read() as session:
        listed = list_environments(session, principal, q, tag, sort=sort, limit=PAGE_SIZE,
                                   offset=(page_number - 1) * PAGE_SIZE)
    return page(request, "index.html", {
        "cards": listed.cards, "total": listed.total, "query": q, "tag": tag,
        "sort": sort if sort in SORTS else "downloads", "sorts": SORTS, **_pages(page_number, listed.total),
    })


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request) -> HTMLResponse:
    """Sign in by pasting an API token."""
    web_session.web_principal(request)
    return page(request, "login.html", {"error": ""})


@router.post("/login", response_model=None)
def login(request: Request, token: Annotated[str, Form(max_length=200)]) -> Response:
    """Check the token and keep it in an HttpOnly cookie."""
    try:
        principal = web_session.sign_in(request, token)
    except (Forbidden, RateLimited) as error:
        request.state.user_name = None
        return page(request, "login.html", {"error": error.message}, status=error.status)
    response = RedirectResponse(f"{request.scope.get('root_path', '')}/{principal.user_name}", status_code=303)
    web_session.remember(response, request, token)
    return response


@router.post("/logout")
def logout(request: Request) -> RedirectResponse:
    """Forget the token."""
    response = RedirectResponse(f"{request.scope.get('root_path', '')}/", status_code=303)
    web_session.forget(response)
    return response


@router.get("/{owner}", response_class=HTMLResponse)
def owner_page(owner: str, request: Request, sort: str = "downloads", page_number: PageNumber = 1) -> HTMLResponse:
    """A user's or organisation's environments (private ones only for those who may see them)."""
    hub = hub_of(request)
    principal = web_session.web_principal(request)
    _flush_downloads(request)
    with hub.db.read() as session:
        try:
            profile = owner_profile(session, owner)
        except NotFound:
            return _not_found(request, f"no user or organisation named {owner!r}")
        listed = list_environments(session, principal, owner=profile.name, sort=sort, limit=PAGE_SIZE,
                                   offset=(page_number - 1) * PAGE_SIZE)
    return page(request, "owner.html", {
        "profile": profile, "cards": listed.cards, "total": listed.total,
        "sort": sort if sort in SORTS else "downloads", "sorts": SORTS, **_pages(page_number, listed.total),
    })


def _environment(request: Request, owner: str, name: str, version: str | None) -> HTMLResponse:
    hub = hub_of(request)
    principal = web_session.web_principal(request)
    if version is not None:
        try:
            version = str(check_version(version))
        except BadRequest:
            return _not_found(request, f"{version!r} is not a version")
    _flush_downloads(request)
    with hub.db.read() as session:
        try:
            view = environment_page(session, hub, principal, owner, name, version, _hub_url(request),
                                    request.scope.get("root_path", ""))
        except NotFound as error:
            return _not_found(request, error.message if version else f"no environment {owner}/{name}")
    return page(request, "environment.html", {"env": view, "project": view.project})


@router.get("/{owner}/{name}", response_class=HTMLResponse)
def environment(owner: str, name: str, request: Request) -> HTMLResponse:
    """An environment's page at its latest version."""
    return _environment(request, owner, name, None)


@router.get("/{owner}/{name}/versions/{version}", response_class=HTMLResponse)
def environment_version(owner: str, name: str, version: str, request: Request) -> HTMLResponse:
    """An environment's page at one version."""
    return _environment(request, owner, name, version)



def _number(text: str) -> int | None:
    """A page's id or position from its path: digits only, at most ten of them (else the page is not found)."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 10 else None


@router.get("/{owner}/{name}/evals/{result_id}", response_class=HTMLResponse)
def eval_result(owner: str, name: str, result_id: str, request: Request, show: TextQuery = "all",
                page_number: PageNumber = 1) -> HTMLResponse:
    """A pushed result: the run, then its rollouts (all, passed, failed or errored), 50 a page."""
    number = _number(result_id)
    if number is None:
        return _not_found(request, f"{result_id!r} is not an eval result")
    chosen: Show = next((s for s in SHOWS if s == show), "all")
    with hub_of(request).db.read() as session:
        try:
            view = eval_page(session, web_session.web_principal(request), owner, name, number, chosen, page_number)
        except NotFound as error:
            return _not_found(request, error.message)
    return page(request, "eval.html", {"view": view, "project": view.project})


@router.get("/{owner}/{name}/evals/{result_id}/rollouts/{position}", response_class=HTMLResponse)
def eval_rollout(owner: str, name: str, result_id: str, position: str, request: Request) -> HTMLResponse:
    """One rollout of a pushed result: its rewards and metrics, then every message, tool call and tool result."""
    number, at = _number(result_id), _number(position)
    if number is None or at is None:
        return _not_found(request, "no such rollout")
    with hub_of(request).db.read() as session:
        try:
            view = rollout_page(session, web_session.web_principal(request), owner, name, number, at)
        except NotFound as error:
            return _not_found(request, error.message)
    return page(request, "rollout.html", {"view": view, "project": view.project})
