"""The queue and the record of the checks the Hub runs itself (``hub_server.db.checks``).

The index process only enqueues (a version's first wheel; a pushed result with rollouts) and reads
outcomes for pages and the JSON API. The worker (``vf-hub worker check``, ``hub_server.worker``) claims
the oldest queued check, runs it in a sandbox and finishes it; any number of workers may poll one database
(a claim is a conditional UPDATE that only one of them wins). A claim whose worker died (still
``running`` after its lease, ``stale_after_s``) is taken again, up to ``MAX_ATTEMPTS`` starts in all.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, func, or_, select, update
from sqlalchemy.orm import Session

from hub_server.db.checks import (
    CONTRACT,
    ERROR,
    FAILED,
    NEEDS_SANDBOXES,
    PASSED,
    QUEUED,
    RESCORE,
    RUNNING,
    ServerCheck,
)
from hub_server.db.database import Database
from hub_server.db.models import File, Project, Release, utcnow
from hub_server.db.records import EvalResult
from hub_server.services import card_tags

MAX_ATTEMPTS = 3
POLICY_YANK_REASON = "failed the Hub's own check (the owner's policy refuses failing versions)"


@dataclass(frozen=True)
class Claimed:
    """A check the worker took: what to fetch and run."""

    id: int
    kind: str
    project: str  # normalised distribution name: what load_environment is given
    version: str
    wheel_sha256: str
    wheel_filename: str
    sdist: tuple[str, str] | None  # (sha256, filename) of the release's sdist, for its [tool.verifiers] tables
    eval_id: int | None


@dataclass(frozen=True)
class CheckView:
    """A check's outcome as pages and the JSON API show it."""

    kind: str
    status: str
    summary: str
    filename: str
    queued_at: dt.datetime
    finished_at: dt.datetime | None
    report: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        """The JSON API's form (timestamps as ISO 8601)."""
        return {"kind": self.kind, "status": self.status, "summary": self.summary, "file": self.filename,
                "queued_at": self.queued_at.isoformat(),
                "finished_at": self.finished_at.isoformat() if self.finished_at else None, "report": self.report}


def _live_wheel(release: Release) -> File | None:
    wheels = [f for f in release.files if f.deleted_at is None and f.packagetype == "bdist_wheel"]
    return min(wheels, key=lambda f: f.id) if wheels else None


def enqueue_contract(session: Session, release: Release, wheel: File) -> None:
    """Queue the contract check of one wheel of a release. Every wheel gets its own: a wheel added to a version
    that passed (another build tag, another spelling of the version) is what ``pip`` may fetch, so the version's
    verdict is its worst wheel's (:func:`contract_check`), never the first wheel's alone."""
    exists = session.scalar(select(ServerCheck.id).where(ServerCheck.kind == CONTRACT, ServerCheck.file_id == wheel.id))
    if exists is None:
        session.add(ServerCheck(kind=CONTRACT, release_id=release.id, file_id=wheel.id, status=QUEUED, summary="",
                                attempts=0))


def enqueue_rescore(session: Session, result: EvalResult) -> bool:
    """Queue re-scoring of a pushed result's rollouts with its release's wheel; False if there is no wheel."""
    wheel = _live_wheel(result.release)
    if wheel is None:
        return False
    session.add(ServerCheck(kind=RESCORE, release_id=result.release_id, file_id=wheel.id, eval_id=result.id,
                            status=QUEUED, summary="", attempts=0))
    return True


def _take(session: Session, check: ServerCheck, status: str, **values: Any) -> bool:
    """Move ``check`` on from what this session read, unless another worker did first.

    ``attempts`` goes up with every claim, so (id, status, attempts) names the exact state read: on
    PostgreSQL a racing claimer's UPDATE waits for the row lock, re-reads the row the winner committed and
    matches nothing (rowcount 0); on SQLite writers are serialised by ``BEGIN IMMEDIATE`` anyway.
    """
    taken = session.execute(
        update(ServerCheck)
        .where(ServerCheck.id == check.id, ServerCheck.status == check.status,
               ServerCheck.attempts == check.attempts)
        .values(status=status, **values)
        .execution_options(synchronize_session=False))
    return bool(getattr(taken, "rowcount", 0) == 1)


def _requester() -> Any:
    """Who asked for a check: the result's submitter for a re-scoring, the wheel's uploader for a contract."""
    return case((ServerCheck.eval_id.is_not(None), EvalResult.submitted_by_id), else_=File.uploaded_by_id)


def _with_requester(query: Any) -> Any:
    return (query.join(File, File.id == ServerCheck.file_id)
            .outerjoin(EvalResult, EvalResult.id == ServerCheck.eval_id))


def _next_check(session: Session, stale: dt.datetime) -> ServerCheck | None:
    """The next check to take, shared fairly between the people who asked: the requester served longest ago
    (or never) first, then that requester's oldest check. A publisher who queues a thousand uploads, or pushes
    a thousand results to someone's project, delays the others by one check at a time, not a thousand."""
    served = (_with_requester(select(_requester().label("requester"), func.max(ServerCheck.started_at).label("last")))
              .where(ServerCheck.started_at.is_not(None)).group_by(_requester()).subquery())
    return session.scalar(
        _with_requester(select(ServerCheck))
        .outerjoin(served, served.c.requester == _requester())
        .where(or_(ServerCheck.status == QUEUED, (ServerCheck.status == RUNNING) & (ServerCheck.started_at < stale)))
        .order_by(served.c.last.is_not(None), served.c.last, ServerCheck.id).limit(1)
        .execution_options(populate_existing=True))


def claim(db: Database, stale_after_s: float) -> Claimed | None:
    """Take the next check (:func:`_next_check`; a running one whose worker died, still running after
    ``stale_after_s``, counts as queued), mark it running, and say what it needs; None when there is nothing to
    take. Two workers never take one check."""
    with db.write() as session:
        while True:
            stale = utcnow() - dt.timedelta(seconds=stale_after_s)
            check = _next_check(session, stale)
            if check is None:
                return None
            if check.attempts >= MAX_ATTEMPTS:
                # its workers kept dying on it (a hang the time limit did not catch, a killed process): give up
                _take(session, check, ERROR, summary=f"the check was started {check.attempts} times and never "
                      "finished", report={}, finished_at=utcnow())
                continue
            if not _take(session, check, RUNNING, started_at=utcnow(), attempts=check.attempts + 1):
                continue  # another worker took it between our read and our write: look again
            wheel = session.get(File, check.file_id)
            release = session.get(Release, check.release_id)
            assert wheel is not None and release is not None
            sdists = [f for f in release.files if f.deleted_at is None and f.packagetype == "sdist"]
            return Claimed(id=check.id, kind=check.kind, project=release.project.normalized,
                           version=release.version, wheel_sha256=wheel.sha256, wheel_filename=wheel.filename,
                           sdist=(sdists[0].sha256, sdists[0].filename) if sdists else None, eval_id=check.eval_id)


def _set_outcome(check: ServerCheck, status: str, summary: str, report: dict[str, Any]) -> None:
    check.status, check.summary, check.report, check.finished_at = status, summary[:500], report, utcnow()


def finish(db: Database, check_id: int, status: str, summary: str, report: dict[str, Any]) -> None:
    """Record a check's outcome; a failed contract check of a project with the policy on yanks its version."""
    with db.write() as session:
        check = session.get(ServerCheck, check_id)
        if check is None:  # its result was withdrawn meanwhile
            return
        _set_outcome(check, status, summary, report)
        if check.kind != CONTRACT or status != FAILED:
            return
        release = session.get(Release, check.release_id)
        assert release is not None
        project: Project = release.project
        if project.refuse_failing_checks and not release.yanked:
            release.yanked, release.yanked_reason = True, POLICY_YANK_REASON
            card_tags.refresh(session, project.id)


def _view(session: Session, check: ServerCheck) -> CheckView:
    wheel = session.get(File, check.file_id)
    return CheckView(kind=check.kind, status=check.status, summary=check.summary,
                     filename=wheel.filename if wheel else "", queued_at=check.queued_at,
                     finished_at=check.finished_at, report=dict(check.report or {}))


# The order a version's verdict is taken in: its worst wheel's check, a verdict against the package first.
_WORST_FIRST = {FAILED: 0, ERROR: 1, RUNNING: 2, QUEUED: 3, NEEDS_SANDBOXES: 4, PASSED: 5}


def _worst(checks: list[ServerCheck]) -> ServerCheck:
    return min(checks, key=lambda check: (_WORST_FIRST.get(check.status, 0), check.id))


def _live(session: Session, check: ServerCheck) -> bool:
    wheel = session.get(File, check.file_id)
    return wheel is not None and wheel.deleted_at is None


def contract_check(session: Session, release_id: int) -> CheckView | None:
    """The release's verdict: the worst contract check of its live wheels (None: uploaded before the Hub
    checked, or no wheel)."""
    checks = [check for check in session.scalars(select(ServerCheck).where(
        ServerCheck.kind == CONTRACT, ServerCheck.release_id == release_id)) if _live(session, check)]
    return _view(session, _worst(checks)) if checks else None


def rescore_checks(session: Session, eval_ids: list[int]) -> dict[int, CheckView]:
    """The latest re-scoring of each of these results (results never queued are absent)."""
    found: dict[int, CheckView] = {}
    if not eval_ids:
        return found
    query = select(ServerCheck).where(ServerCheck.kind == RESCORE, ServerCheck.eval_id.in_(eval_ids))
    for check in session.scalars(query.order_by(ServerCheck.id)):
        assert check.eval_id is not None
        found[check.eval_id] = _view(session, check)
    return found


def contract_checks(session: Session, normalized: str) -> dict[str, CheckView]:
    """Each version's verdict (its worst live wheel's check), by version, for a project's JSON."""
    query = (select(ServerCheck, Release.version).join(Release, ServerCheck.release_id == Release.id)
             .join(Project, Release.project_id == Project.id)
             .where(Project.normalized == normalized, ServerCheck.kind == CONTRACT).order_by(ServerCheck.id))
    by_version: dict[str, list[ServerCheck]] = {}
    for check, version in session.execute(query):
        if _live(session, check):
            by_version.setdefault(version, []).append(check)
    return {version: _view(session, _worst(checks)) for version, checks in by_version.items()}


def refuses_failing(session: Session, normalized: str) -> bool:
    """Whether the project's owner refuses versions failing the check."""
    return bool(session.scalar(select(Project.refuse_failing_checks).where(Project.normalized == normalized)))
