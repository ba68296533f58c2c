"""The simple repository API, Hub-wide (``/simple/``) and per owner (``/<owner>/simple/``).

Unknown and private projects answer 404 (never 401/403: uv stops at an index that does, and
every dependency of an install is looked up here too). Non-normalised names and a missing
trailing slash are redirected (301) to the canonical URL.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from hub_server.api import simple_render
from hub_server.api.lookups import PageRows, page_rows, page_view
from hub_server.api.negotiation import JSON_V1, TEXT_HTML, choose_media_type
from hub_server.context import hub_of
from hub_server.errors import NotFound
from hub_server.names import normalize
from hub_server.services.catalog import list_projects

router = APIRouter()


def _respond(request: Request, media_type: str, body: bytes, private: bool) -> Response:
    hub = hub_of(request)
    cache = "private, no-store" if private else f"public, max-age={hub.settings.simple_cache_seconds}"
    content_type = f"{TEXT_HTML}; charset=utf-8" if media_type == TEXT_HTML else media_type
    return Response(body, headers={"Content-Type": content_type, "Vary": "Accept", "Cache-Control": cache})


def _index(request: Request, owner: str | None) -> Response:
    media_type = choose_media_type(request.headers.get("accept"))
    hub = hub_of(request)
    principal = hub.optional_principal(request)
    with hub.db.read() as session:
        projects = list_projects(session, principal, owner)
    render = simple_render.index_json if media_type == JSON_V1 else simple_render.index_html
    return _respond(request, media_type, render(projects), private=principal is not None)


def _page_key(normalized: str, owner: str | None, media_type: str, prefix: str) -> tuple[str, ...]:
    return ("simple", normalized, owner or "", media_type, prefix)


def _project_page(request: Request, normalized: str, owner: str | None, media_type: str) -> Response:
    hub = hub_of(request)
    principal = hub.optional_principal(request)
    prefix = request.scope.get("root_path", "")
    if principal is not None:
        with hub.db.read() as session:
            rows = page_rows(session, principal, normalized, owner)
        return _respond(request, media_type, _render(rows, normalized, media_type, prefix), private=rows[0].private)

    def anonymous_page() -> bytes | None:
        try:
            with hub.db.read() as session:
                rows = page_rows(session, None, normalized, owner)
        except NotFound:
            return None  # 404s are most of an extra index's traffic: cached too
        return _render(rows, normalized, media_type, prefix)

    return _anonymous(request, media_type, hub.reads.get(_page_key(normalized, owner, media_type, prefix),
                                                          anonymous_page))


def _anonymous(request: Request, media_type: str, body: bytes | None) -> Response:
    if body is None:
        raise NotFound("no such project")
    return _respond(request, media_type, body, private=False)  # anonymous callers see public projects only


def _render(rows: PageRows, normalized: str, media_type: str, prefix: str) -> bytes:
    render = simple_render.project_json if media_type == JSON_V1 else simple_render.project_html
    return render(page_view(rows, normalized), prefix)


async def _project(request: Request, project: str, owner: str | None, base: str) -> Response:
    normalized = normalize(project)
    if normalized != project or not request.url.path.endswith("/"):
        return RedirectResponse(f"{base}/{normalized}/", status_code=301)
    media_type = choose_media_type(request.headers.get("accept"))
    if "authorization" not in request.headers:  # the hot case: an anonymous page (or 404) still in memory
        hit = hub_of(request).reads.peek(_page_key(normalized, owner, media_type, request.scope.get("root_path", "")))
        if hit is not None:
            return _anonymous(request, media_type, hit.value)
    return await run_in_threadpool(_project_page, request, normalized, owner, media_type)


@router.api_route("/simple/", methods=["GET", "HEAD"])
def simple_index(request: Request) -> Response:
    """Every project the caller may see."""
    return _index(request, None)


@router.api_route("/simple", methods=["GET", "HEAD"], include_in_schema=False)
def simple_index_no_slash(request: Request) -> Response:
    return RedirectResponse(f"{request.scope.get('root_path', '')}/simple/", status_code=301)


@router.api_route("/simple/{project}/", methods=["GET", "HEAD"])
@router.api_route("/simple/{project}", methods=["GET", "HEAD"], include_in_schema=False)
async def simple_project(project: str, request: Request) -> Response:
    """One project's files, in the format the Accept header asks for."""
    return await _project(request, project, None, f"{request.scope.get('root_path', '')}/simple")


@router.api_route("/{owner}/simple/", methods=["GET", "HEAD"])
def owner_index(owner: str, request: Request) -> Response:
    """Every project of one owner that the caller may see."""
    return _index(request, owner)


@router.api_route("/{owner}/simple", methods=["GET", "HEAD"], include_in_schema=False)
def owner_index_no_slash(owner: str, request: Request) -> Response:
    return RedirectResponse(f"{request.scope.get('root_path', '')}/{owner}/simple/", status_code=301)


@router.api_route("/{owner}/simple/{project}/", methods=["GET", "HEAD"])
@router.api_route("/{owner}/simple/{project}", methods=["GET", "HEAD"], include_in_schema=False)
async def owner_project(owner: str, project: str, request: Request) -> Response:
    """One project of one owner (404 if another owner holds the name)."""
    return await _project(request, project, owner, f"{request.scope.get('root_path', '')}/{owner}/simple")
