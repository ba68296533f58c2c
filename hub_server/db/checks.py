"""Checks the Hub runs itself, in its worker (``vf-hub worker check``): one row per check, queue and record.

``kind`` is ``"contract"`` (a version's wheel: install, load, a few rollouts) or ``"rescore"`` (a pushed
result's rollouts scored again). The index process only inserts ``queued`` rows and reads outcomes; the
worker claims a row (``running``), runs it in a sandbox and writes the outcome.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from hub_server.db.models import Base, UTCDateTime, utcnow

CONTRACT = "contract"
RESCORE = "rescore"

QUEUED, RUNNING = "queued", "running"
PASSED, FAILED = "passed", "failed"  # contract outcomes
# installed and loaded, but its rollouts need sandboxes of its own, which cannot start inside the check's:
# not a verdict on the package (shown neutrally, never yanked by the owner's policy)
NEEDS_SANDBOXES = "needs-sandboxes"
RESCORED, MISMATCH, NOT_RESCORABLE = "rescored", "mismatch", "not-rescorable"  # re-scoring outcomes
ERROR = "error"  # the check could not run (a sandbox that failed): nobody's verdict on the package


class ServerCheck(Base):
    """One check of a version's wheel (``contract``) or of a pushed result (``rescore``)."""

    __tablename__ = "server_checks"
    __table_args__ = (Index("ix_server_checks_status_id", "status", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(12))
    release_id: Mapped[int] = mapped_column(ForeignKey("releases.id"), index=True)
    file_id: Mapped[int] = mapped_column(ForeignKey("files.id"), index=True)  # the wheel checked
    eval_id: Mapped[int | None] = mapped_column(ForeignKey("eval_results.id", ondelete="CASCADE"), index=True,
                                                nullable=True)
    status: Mapped[str] = mapped_column(String(16), default=QUEUED)
    summary: Mapped[str] = mapped_column(String(500), default="")  # one line: why it failed, or what passed
    # log tail, timings, SDK version, what was found (services/server_checks.py writes it)
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    queued_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
