"""Evaluation results over the JSON API: ``vf-eval --push`` posts a run, anyone reads the leaderboard."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from hub_server.context import hub_of
from hub_server.errors import BadRequest, BodyTooLarge
from hub_server.services import eval_rollouts, evals, server_checks

router = APIRouter(prefix="/api/v1")

# A metadata.json is a few KiB, its summary at most 64 KiB; the rollouts take the rest (the client keeps under 12 MiB).
MAX_BODY_BYTES = 16 * 1024 * 1024


class NewEval(BaseModel):
    """A finished ``vf-eval`` run, pushed to one published version of an environment."""

    project: str = Field(max_length=100, description="Distribution name of the environment, e.g. reverse-text.")
    version: str = Field(max_length=100, description="The version the run used (the installed one).")
    owner: str | None = Field(default=None, max_length=39, description="Its owner, checked when given.")
    metadata: dict[str, Any] = Field(description="The run's metadata.json.")
    summary: str = Field(default="", max_length=evals.MAX_SUMMARY_CHARS, description="The table vf-eval printed.")
    rollouts: list[eval_rollouts.PushedRollout] = Field(
        default_factory=list, max_length=eval_rollouts.MAX_ROLLOUTS,
        description="The run's rollouts (its results.jsonl, bounded), shown on the result's pages.")


async def _json_body(request: Request) -> NewEval:
    """Read at most ``MAX_BODY_BYTES`` (a missing or lying Content-Length cannot get past the cap), decoded as
    strict UTF-8 and parsed within the parser's nesting limit; each failure is a 4xx that says which."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared[:20]) > MAX_BODY_BYTES:
        raise BodyTooLarge(f"the request body is larger than {MAX_BODY_BYTES} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise BodyTooLarge(f"the request body is larger than {MAX_BODY_BYTES} bytes")
    try:
        return NewEval.model_validate(json.loads(bytes(body).decode("utf-8")))
    except UnicodeDecodeError as error:
        raise BadRequest(f"the body must be UTF-8 JSON: {error.reason} at byte {error.start}") from None
    except json.JSONDecodeError as error:
        raise BadRequest(f"the body must be JSON: {error.msg} at position {error.pos}") from None
    except RecursionError:  # the C parser stops at the interpreter's recursion limit (about 1,000 levels)
        raise BadRequest("the body is nested too deeply to be a run's results") from None
    except ValidationError as error:
        first = error.errors()[0]
        raise BadRequest(f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None


@router.post("/evals", status_code=201)
async def push_eval(request: Request) -> dict[str, Any]:
    """Attach a run's results to a version; it appears on the environment's leaderboard."""
    hub = hub_of(request)
    principal = await run_in_threadpool(hub.principal, request)
    await run_in_threadpool(hub.limit_writes, principal)  # a database write: off the event loop
    body = await _json_body(request)

    def store() -> dict[str, Any]:
        with hub.db.write() as session:
            result = evals.record_eval(session, principal, body.project, body.version, body.metadata,
                                       body.summary, body.owner)
            eval_rollouts.store_rollouts(session, result, body.rollouts)
            if body.rollouts:  # the worker re-scores a sample of them (services/server_checks.py)
                server_checks.enqueue_rescore(session, result)
            project = result.release.project
            return {"id": result.id, "owner": project.owner.name, "project": project.name,
                    "version": result.release.version, "by_publisher": result.by_publisher,
                    "artifact_verified": result.artifact_verified}

    stored = await run_in_threadpool(store)
    base = (hub.settings.public_url or str(request.base_url)).rstrip("/")
    return {**stored, "url": f"{base}/{stored['owner']}/{stored['project']}/evals/{stored['id']}",
            "rollouts": len(body.rollouts)}


@router.get("/projects/{owner}/{name}/evals")
def list_evals(owner: str, name: str, request: Request, version: str | None = None,
               limit: int = Query(evals.LEADERBOARD_PAGE, ge=1, le=1000),
               offset: int = Query(0, ge=0)) -> dict[str, Any]:
    """The environment's leaderboard, best average reward first (optionally of one version), a page at a time;
    ``total`` counts them all. A result's summary is on its own route."""
    hub = hub_of(request)
    principal = hub.optional_principal(request)
    with hub.db.read() as session:
        rows = evals.leaderboard(session, principal, name, owner, version, limit=limit, offset=offset)
        total = evals.count_results(session, principal, name, owner, version)
    return {"results": [_row_json(r) for r in rows], "total": total, "offset": offset, "limit": limit}


def _row_json(row: evals.LeaderboardRow) -> dict[str, Any]:
    data = dataclasses.asdict(row)
    for key in ("run_date", "created_at"):
        data[key] = data[key].isoformat() if data[key] else None
    return data


@router.get("/evals/{result_id}")
def get_eval(result_id: int, request: Request) -> dict[str, Any]:
    """One result, with the summary its run printed."""
    hub = hub_of(request)
    principal = hub.optional_principal(request)
    with hub.db.read() as session:
        return _row_json(evals.result_row(session, principal, result_id))


@router.delete("/evals/{result_id}")
def delete_eval(result_id: int, request: Request) -> dict[str, Any]:
    """Withdraw a result (its submitter or the project's publishers)."""
    hub = hub_of(request)
    principal = hub.principal(request)
    hub.limit_writes(principal)
    with hub.db.write() as session:
        evals.delete_eval(session, principal, result_id)
    return {"deleted": result_id}
