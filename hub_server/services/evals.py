"""Evaluation results attached to a version (``vf-eval ... --push``) and the leaderboard built from them.

Who may push: anyone with a publish token who can see the project (results from the community
are welcome), within the token's scope. A result from someone who may publish the project is
marked as the owner's own. What the run's metadata says it installed (``artifact_verified``: a sha256
matching one of the release's files) is only the client's word, anyone can read those hashes from
``/simple/``; a result is vouched for only as **re-scored**: the Hub's worker scored a sample of its
rollouts again with the environment's own rubric and every reward matched (``services/server_checks.py``).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass
from typing import Any, Literal

from packaging.version import Version
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session, selectinload

from hub_server.auth.principal import PUBLISH, Principal, can_read
from hub_server.db.checks import MISMATCH, RESCORE, RESCORED, ServerCheck
from hub_server.db.models import Project, Release
from hub_server.db.records import EvalResult
from hub_server.errors import BadRequest, Forbidden, NotFound
from hub_server.names import check_version, normalize, release_key
from hub_server.services.catalog import project_view
from hub_server.services.server_checks import CheckView, rescore_checks

MAX_SUMMARY_CHARS = 64 * 1024
# A vf-eval metadata.json is a few KB with ~25 keys: these bounds leave room and stop a push from storing
# megabytes that every reader then pays for (40 pushes of 16 MiB took one page view from 0.04 s to 15 s).
MAX_METADATA_BYTES = 256 * 1024
MAX_METADATA_KEYS = 100
MAX_METADATA_DEPTH = 20
MAX_ENV_ARGS_BYTES = 8 * 1024
#: Results an environment page's leaderboard shows (the API pages through all of them).
LEADERBOARD_PAGE = 100
_MAX_METRICS = 100
_SECRET_CONFIG_KEYS = ("headers",)  # --header values may carry API keys


class RunMetadata(BaseModel):
    """The parts of a run's ``metadata.json`` the Hub relies on (the rest is kept as it came)."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=200)
    status: Literal["complete"] = Field(description="Only finished runs go on a leaderboard.")
    avg_reward: float = Field(allow_inf_nan=False)
    std_reward: float = Field(default=0.0, allow_inf_nan=False)
    num_examples: int = Field(ge=0)
    rollouts_per_example: int = Field(ge=1)
    avg_metrics: dict[str, float] = Field(default_factory=dict)
    pass_at_k: dict[str, float] = Field(default_factory=dict)
    date: dt.datetime | None = None
    version_info: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class LeaderboardRow:
    """One pushed result as the leaderboard shows it."""

    id: int
    version: str
    model: str
    avg_reward: float
    std_reward: float
    num_examples: int
    rollouts_per_example: int
    metrics: dict[str, float]
    pass_at_1: float | None
    submitted_by: str
    by_publisher: bool
    artifact_verified: bool  # the client's claim only (see the module docstring); never shown as verified
    rescore: str  # the re-scoring's status ("rescored", "mismatch", "not-rescorable", "queued", ...), "" if none
    rescore_summary: str
    # The Hub vouches for the figures: every rollout of the run was pushed, the figures are theirs, and a
    # sample of them re-scored the same. Anything else is the client's word (the page says "unverified").
    verified: bool
    env_args: dict[str, Any]
    run_date: dt.datetime | None
    created_at: dt.datetime
    summary: str


def _depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is not None:
            deepest = max(deepest, depth + 1)
            if deepest > MAX_METADATA_DEPTH:
                return deepest
            stack.extend((child, depth + 1) for child in children)
    return deepest


def _json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), default=str).encode())


def check_metadata_bounds(metadata: dict[str, Any]) -> None:
    """Refuse metadata larger, wider or deeper than a run's ever is (:class:`BadRequest`, nothing stored)."""
    if len(metadata) > MAX_METADATA_KEYS:
        raise BadRequest(f"invalid run metadata: {len(metadata)} keys, more than the {MAX_METADATA_KEYS} allowed")
    if _depth(metadata) > MAX_METADATA_DEPTH:
        raise BadRequest(f"invalid run metadata: nested deeper than {MAX_METADATA_DEPTH} levels")
    size = _json_size(metadata)
    if size > MAX_METADATA_BYTES:
        raise BadRequest(f"invalid run metadata: {size:,} bytes as JSON, more than the {MAX_METADATA_BYTES:,} "
                         "allowed")
    env_args = metadata.get("env_args")
    if isinstance(env_args, dict) and _json_size(env_args) > MAX_ENV_ARGS_BYTES:
        raise BadRequest(f"invalid run metadata: env_args is more than {MAX_ENV_ARGS_BYTES:,} bytes as JSON")


def parse_metadata(metadata: dict[str, Any]) -> RunMetadata:
    """Validate a run's metadata; :class:`BadRequest` says which field is wrong."""
    check_metadata_bounds(metadata)
    try:
        parsed = RunMetadata.model_validate(metadata)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "metadata"
        raise BadRequest(f"invalid run metadata: {where}: {first['msg']} (push a finished vf-eval run's "
                         "metadata.json)") from None
    numbers = {**parsed.avg_metrics, **parsed.pass_at_k}
    if len(numbers) > 2 * _MAX_METRICS or not all(math.isfinite(v) for v in numbers.values()):
        raise BadRequest(
            f"invalid run metadata: avg_metrics and pass_at_k hold at most {_MAX_METRICS} finite numbers each")
    return parsed


def _without_secrets(metadata: dict[str, Any]) -> dict[str, Any]:
    clean = dict(metadata)
    if isinstance(clean.get("config"), dict):
        clean["config"] = {k: v for k, v in clean["config"].items() if k not in _SECRET_CONFIG_KEYS}
    return clean


def _installed_sha256(meta: RunMetadata) -> set[str]:
    package = meta.version_info.get("environment_package") or {}
    if not isinstance(package, dict):
        return set()
    hashes = package.get("archive_hashes")
    if not isinstance(hashes, dict):
        hashes = {}
    found = {hashes.get("sha256"), package.get("wheel_sha256")}
    return {h.lower() for h in found if isinstance(h, str)}


def may_submit(principal: Principal, project: Project) -> bool:
    """Publish tokens may push results to any project they can see, within their scope."""
    return (principal.permission == PUBLISH and principal.can_read(project)
            and principal.scope_owner_id in (None, project.owner_id)
            and principal.scope_project in (None, project.normalized))


def record_eval(session: Session, principal: Principal, name: str, version: str, metadata: dict[str, Any],
                summary: str = "", owner: str | None = None) -> EvalResult:
    """Attach a finished run to ``name@version``; returns the stored result."""
    if len(summary) > MAX_SUMMARY_CHARS:
        raise BadRequest(f"the summary is longer than {MAX_SUMMARY_CHARS} characters")
    meta = parse_metadata(metadata)
    wanted = check_version(version)
    project_view(session, principal, name, owner)  # NotFound for unknown, private and quarantined projects
    project = session.scalar(select(Project).where(Project.normalized == normalize(name))
                             .options(selectinload(Project.releases).selectinload(Release.files)))
    assert project is not None  # project_view found it
    if not may_submit(principal, project):
        raise Forbidden(f"this token may not push results to {project.name}: a publish token is needed "
                        "(scoped tokens only for their own owner or project)")
    release = next((r for r in project.releases if Version(r.version) == wanted), None)
    if release is None:
        raise NotFound(f"{project.name} has no version {version} on this Hub; push results for a published version")
    shas = {f.sha256 for f in release.files if f.deleted_at is None}
    result = EvalResult(
        release_id=release.id, submitted_by_id=principal.user_id,
        by_publisher=principal.can_publish(project.owner_id, project.normalized),
        artifact_verified=bool(_installed_sha256(meta) & shas), model=meta.model,
        avg_reward=meta.avg_reward, std_reward=meta.std_reward, num_examples=meta.num_examples,
        rollouts_per_example=meta.rollouts_per_example, metrics=dict(meta.avg_metrics),
        pass_at_k=dict(meta.pass_at_k), run_metadata=_without_secrets(metadata), summary=summary,
        env_args=metadata["env_args"] if isinstance(metadata.get("env_args"), dict) else {},
        run_date=meta.date.astimezone(dt.timezone.utc) if meta.date and meta.date.tzinfo else None,
    )
    session.add(result)
    session.flush()
    return result


def leaderboard_row(result: EvalResult, rescore: CheckView | None = None,
                    with_summary: bool = False) -> LeaderboardRow:
    """One result as the leaderboard shows it (and with ``with_summary``, as its own page does), with its
    re-scoring if it has one. Without the summary its deferred column is never loaded."""
    env_args = result.env_args
    pass_1 = result.pass_at_k.get("1")
    return LeaderboardRow(
        id=result.id, version=result.release.version, model=result.model, avg_reward=result.avg_reward,
        std_reward=result.std_reward, num_examples=result.num_examples,
        rollouts_per_example=result.rollouts_per_example, metrics=dict(result.metrics),
        pass_at_1=float(pass_1) if isinstance(pass_1, (int, float)) else None,
        submitted_by=result.submitted_by.name, by_publisher=result.by_publisher,
        artifact_verified=result.artifact_verified, rescore=rescore.status if rescore else "",
        rescore_summary=rescore.summary if rescore else "", env_args=env_args if isinstance(env_args, dict) else {},
        verified=result.rollouts_complete and rescore is not None and rescore.status == RESCORED,
        run_date=result.run_date, created_at=result.created_at, summary=result.summary if with_summary else "",
    )


def _results_of(view_normalized: str, version: str | None) -> Select[Any]:
    query = (select(EvalResult).join(Release, EvalResult.release_id == Release.id)
             .join(Project, Release.project_id == Project.id).where(Project.normalized == view_normalized))
    if version is not None:
        query = query.where(Release.canonical_version == release_key(check_version(version)))
    return query


def leaderboard(session: Session, principal: Principal | None, name: str, owner: str | None = None,
                version: str | None = None, limit: int | None = None, offset: int = 0) -> list[LeaderboardRow]:
    """The project's results, best average reward first (ties: the earlier push first; a re-score mismatch
    last), ``limit`` of them from ``offset``, sorted and paged in SQL; no row loads a result's metadata or
    summary."""
    view = project_view(session, principal, name, owner)
    # A result the Hub re-scored and found different ranks below every other, whatever it claims.
    mismatched = select(ServerCheck.eval_id).where(ServerCheck.kind == RESCORE, ServerCheck.status == MISMATCH)
    query = (_results_of(view.normalized, version)
             .options(selectinload(EvalResult.release), selectinload(EvalResult.submitted_by))
             .order_by(EvalResult.id.in_(mismatched), EvalResult.avg_reward.desc(), EvalResult.id)
             .offset(offset).limit(limit))
    results = list(session.scalars(query))
    rescores = rescore_checks(session, [r.id for r in results])
    return [leaderboard_row(r, rescores.get(r.id)) for r in results]


def count_results(session: Session, principal: Principal | None, name: str, owner: str | None = None,
                  version: str | None = None) -> int:
    """How many results the project (or one of its versions) has."""
    view = project_view(session, principal, name, owner)
    return int(session.scalar(select(func.count()).select_from(_results_of(view.normalized, version).subquery()))
               or 0)


def result_row(session: Session, principal: Principal | None, result_id: int) -> LeaderboardRow:
    """One result with its summary, if ``principal`` may read its project (else :class:`NotFound`)."""
    result = session.get(EvalResult, result_id)
    if result is None or not can_read(principal, result.release.project):
        raise NotFound(f"no eval result {result_id}")
    return leaderboard_row(result, rescore_checks(session, [result.id]).get(result.id), with_summary=True)


def delete_eval(session: Session, principal: Principal, result_id: int) -> None:
    """Withdraw a result: its submitter or a publisher of the project may."""
    result = session.get(EvalResult, result_id)
    if result is None or not principal.can_read(result.release.project):
        raise NotFound(f"no eval result {result_id}")
    project = result.release.project
    if result.submitted_by_id != principal.user_id and not principal.can_publish(project.owner_id, project.normalized):
        raise Forbidden("only the submitter or the project's publishers may delete this result")
    if principal.permission != PUBLISH:
        raise Forbidden("deleting a result needs a publish token")
    session.delete(result)
