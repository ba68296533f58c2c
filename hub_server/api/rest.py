"""The JSON API the ``vf-hub`` CLI speaks (``/api/v1``), Bearer tokens; errors are ``{"detail": ...}``."""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from hub_server.api.simple_render import file_url
from hub_server.auth.principal import PERMISSIONS, Principal
from hub_server.context import Hub, hub_of
from hub_server.errors import BadRequest
from hub_server.install_commands import InstallTarget, pick_file, pip_text, uv_text
from hub_server.services import accounts, catalog, server_checks
from hub_server.services.catalog import ProjectView

router = APIRouter(prefix="/api/v1")


class NewProject(BaseModel):
    owner: str = Field(description="User or organisation that will own the project.")
    name: str = Field(description="Distribution name, as in pyproject.toml.")
    private: bool = Field(default=False, description="Visible only to the owner's members.")


class ProjectChange(BaseModel):
    private: bool | None = Field(default=None, description="Visible only to the owner's members.")
    refuse_failing_checks: bool | None = Field(
        default=None, description="Yank every version that fails the Hub's own check (install, load, rollouts).")


class Yank(BaseModel):
    reason: str = Field(default="", max_length=500, description="Shown by pip and uv when the version is installed.")


class NewToken(BaseModel):
    permission: str = Field(default="read", description=f"One of {', '.join(PERMISSIONS)}.")
    owner: str | None = Field(default=None, description="Limit the token to this owner's projects.")
    project: str | None = Field(default=None, description="Limit the token to one project.")
    expires_days: int = Field(default=90, gt=0, le=3650, description="Lifetime in days.")
    description: str = Field(default="", max_length=200, description="A note to recognise the token by.")


def _hub_url(request: Request, hub: Hub) -> str:
    return (hub.settings.public_url or str(request.base_url)).rstrip("/")


def _project_json(view: ProjectView, request: Request, hub: Hub,
                  checks: dict[str, server_checks.CheckView]) -> dict[str, Any]:
    prefix = request.scope.get("root_path", "")
    hub_url = _hub_url(request, hub)
    versions = []
    for release in view.releases:
        files = [f for f in view.files if f.version == release.version]
        check = checks.get(release.version)
        versions.append({
            "version": release.version, "yanked": release.yanked, "yanked_reason": release.yanked_reason,
            "requires_python": release.requires_python, "summary": release.summary,
            "created_at": release.created_at.isoformat(),
            "server_check": check.as_json() if check is not None else None,
            "files": [{"filename": f.filename, "url": file_url(prefix, f.sha256, f.filename), "sha256": f.sha256,
                       "size": f.size, "packagetype": f.packagetype} for f in files],
        })
    install: dict[str, str] = {}
    latest = view.latest
    if latest is not None:
        files = [f for f in view.files if f.version == latest]
        chosen = pick_file([f.filename for f in files])
        file = next(f for f in files if f.filename == chosen) if chosen else files[0]
        target = InstallTarget(hub_url, view.owner, view.name, latest,
                               f"{prefix}/files/{file.sha256}/{file.filename}", file.sha256)
        install = {"uv": uv_text(target), "pip": pip_text(target)}
    return {
        "owner": view.owner, "name": view.name, "normalized": view.normalized, "private": view.private,
        "summary": view.summary, "description": view.description,
        "description_content_type": view.description_content_type, "latest": latest,
        "index_url": f"{hub_url}/{view.owner}/simple/", "versions": versions, "install": install,
    }


@router.get("/whoami")
def whoami(request: Request) -> dict[str, Any]:
    """The user and scope of the caller's token."""
    principal = hub_of(request).principal(request)
    return {"user": principal.user_name, "permission": principal.permission, "scope_project": principal.scope_project}


@router.get("/projects")
def search_projects(request: Request, q: str = Query("", max_length=200), owner: str | None = None,
                    limit: int = Query(50, ge=1, le=500), offset: int = Query(0, ge=0)) -> dict[str, Any]:
    """Projects the caller may see whose name, summary or keywords contain ``q``."""
    hub = hub_of(request)
    principal = hub.optional_principal(request)
    with hub.db.read() as session:
        views = catalog.search(session, principal, q, owner, limit, offset)
    return {"projects": [{"owner": v.owner, "name": v.name, "summary": v.summary, "latest": v.latest,
                          "private": v.private} for v in views]}


@router.get("/projects/{owner}/{name}")
def project_info(owner: str, name: str, request: Request) -> dict[str, Any]:
    """Everything about one project: versions, files, install commands."""
    hub = hub_of(request)
    principal = hub.optional_principal(request)
    with hub.db.read() as session:
        view = catalog.project_view(session, principal, name, owner)
        checks = server_checks.contract_checks(session, view.normalized)
        refuse = server_checks.refuses_failing(session, view.normalized)
    return {**_project_json(view, request, hub, checks), "refuse_failing_checks": refuse}


def _writer(request: Request) -> tuple[Hub, Principal]:
    hub = hub_of(request)
    principal = hub.principal(request)
    hub.limit_writes(principal)
    return hub, principal


@router.post("/projects", status_code=201)
def create_project(body: NewProject, request: Request) -> dict[str, Any]:
    """Register a project before its first upload (the way to make it private from the start)."""
    hub, principal = _writer(request)
    with hub.db.write() as session:
        project = catalog.create_project(session, principal, body.owner, body.name, body.private,
                                         hub.settings.reserved_names)
        return {"owner": body.owner, "name": project.name, "private": project.private}


@router.patch("/projects/{owner}/{name}")
def change_project(owner: str, name: str, body: ProjectChange, request: Request) -> dict[str, Any]:
    """Change a project's visibility, or its policy on versions failing the Hub's check."""
    if body.private is None and body.refuse_failing_checks is None:
        raise BadRequest("name what to change: private and/or refuse_failing_checks")
    hub, principal = _writer(request)
    with hub.db.write() as session:
        if body.private is not None:
            catalog.set_private(session, principal, owner, name, body.private)
        if body.refuse_failing_checks is not None:
            catalog.set_refuse_failing_checks(session, principal, owner, name, body.refuse_failing_checks)
    return {"owner": owner, "name": name, **body.model_dump(exclude_none=True)}


@router.post("/projects/{owner}/{name}/versions/{version}/yank")
def yank(owner: str, name: str, version: str, body: Yank, request: Request) -> dict[str, Any]:
    """Yank a version (PEP 592): pinned installs still work, unpinned ones skip it."""
    hub, principal = _writer(request)
    with hub.db.write() as session:
        catalog.set_yanked(session, principal, owner, name, version, True, body.reason)
    return {"version": version, "yanked": True, "reason": body.reason}


@router.post("/projects/{owner}/{name}/versions/{version}/unyank")
def unyank(owner: str, name: str, version: str, request: Request) -> dict[str, Any]:
    """Undo a yank."""
    hub, principal = _writer(request)
    with hub.db.write() as session:
        catalog.set_yanked(session, principal, owner, name, version, False)
    return {"version": version, "yanked": False}


@router.delete("/projects/{owner}/{name}/files/{filename}")
def delete_file(owner: str, name: str, filename: str, request: Request) -> dict[str, Any]:
    """Remove a file from the index for good; its filename can never be uploaded again."""
    hub, principal = _writer(request)
    with hub.db.write() as session:
        catalog.delete_file(session, principal, owner, name, filename)
    return {"deleted": filename}


@router.post("/tokens", status_code=201)
def create_token(body: NewToken, request: Request) -> dict[str, Any]:
    """A new token, narrower than (or as wide as) the caller's; shown once."""
    hub, principal = _writer(request)
    with hub.db.write() as session:
        token = accounts.derive_token(session, principal, body.permission,
                                      expires_in=dt.timedelta(days=body.expires_days), scope_owner=body.owner,
                                      scope_project=body.project, description=body.description)
    return {"token": token, "id": token.split("_")[1], "permission": body.permission}


@router.get("/tokens")
def list_tokens(request: Request) -> dict[str, Any]:
    """The caller's tokens (ids and scopes; secrets are not stored, so never shown again)."""
    hub = hub_of(request)
    principal = hub.principal(request)
    with hub.db.read() as session:
        tokens = accounts.list_tokens(session, principal)
        return {"tokens": [{
            "id": t.public_id, "permission": t.permission, "project": t.scope_project,
            "description": t.description, "created_at": t.created_at.isoformat(),
            "expires_at": t.expires_at.isoformat() if t.expires_at else None,
            "last_used_at": t.last_used_at.isoformat() if t.last_used_at else None,
            "revoked": t.revoked_at is not None,
        } for t in tokens]}


@router.delete("/tokens/{public_id}")
def revoke_token(public_id: str, request: Request) -> dict[str, Any]:
    """Revoke one of the caller's tokens; it stops working at once."""
    hub, principal = _writer(request)
    with hub.db.write() as session:
        accounts.revoke_token(session, principal, public_id)
    return {"revoked": public_id}
