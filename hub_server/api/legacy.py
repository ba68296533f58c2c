"""The twine-compatible upload API: ``POST /legacy/`` (and ``/legacy``, ``/<owner>/legacy/``).

Credentials are checked from the headers before the body is read, so an unauthorised upload
is refused without receiving it. A new project goes to the owner in the URL, else to the
owner the token is scoped to, else to the token's user.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse
from starlette.concurrency import run_in_threadpool

from hub_server.api.upload_stream import UploadReceiver
from hub_server.auth.principal import PUBLISH
from hub_server.context import hub_of
from hub_server.errors import Forbidden, HubError
from hub_server.metrics import UploadOutcome
from hub_server.names import check_owner_name
from hub_server.services.publish import publish

router = APIRouter()


async def _upload(request: Request, owner: str | None) -> PlainTextResponse:
    hub = hub_of(request)
    try:
        response, outcome = await _receive_and_publish(request, owner)
    except HubError:
        hub.metrics.count_upload("refused")
        raise
    hub.metrics.count_upload(outcome)
    return response


async def _receive_and_publish(request: Request, owner: str | None) -> tuple[PlainTextResponse, UploadOutcome]:
    hub = hub_of(request)
    if owner is not None:
        check_owner_name(owner)
    principal = await run_in_threadpool(hub.principal, request)
    if principal.permission != PUBLISH:
        raise Forbidden("this token is read-only; uploading needs a publish token")
    await run_in_threadpool(hub.limit_writes, principal)  # a database write: off the event loop
    receiver = UploadReceiver(hub.storage.staging_dir(), hub.settings.max_file_size, hub.settings.max_form_field_size)
    fields, staged = await receiver.receive(request)
    outcome = await run_in_threadpool(
        publish, hub.db, hub.storage, principal, fields, staged, owner_name=owner,
        reserved=hub.settings.reserved_names, max_unpacked=hub.settings.max_sdist_unpacked_size,
    )
    counted: UploadOutcome = "created" if outcome.created else "repaired" if outcome.repaired else "unchanged"
    note = {
        "created": "OK",
        "repaired": "OK (identical file already uploaded; its damaged stored copy was replaced by these bytes)",
        "unchanged": "OK (identical file already uploaded; nothing changed)",
    }[counted]
    return PlainTextResponse(f"{note}: {outcome.filename}\n"), counted


@router.post("/legacy/", include_in_schema=False)
@router.post("/legacy")
async def upload(request: Request) -> PlainTextResponse:
    """Upload one distribution file (twine's legacy API)."""
    return await _upload(request, None)


@router.post("/{owner}/legacy/", include_in_schema=False)
@router.post("/{owner}/legacy")
async def upload_to_owner(owner: str, request: Request) -> PlainTextResponse:
    """Upload one distribution file into ``owner``'s namespace (an organisation, say)."""
    return await _upload(request, owner)
