"""What the Hub records about how environments are used: downloads per file and day, evaluation results and
the rollouts pushed with them; the recent events its rate limits count; and the blobs ``vf-hub admin verify``
found damaged.

Downloads and results only ever grow (a result can be withdrawn by its submitter or the project's
publishers); rate events are deleted once they leave their window.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, Date, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from hub_server.db.models import Base, Owner, Release, UTCDateTime, utcnow


class DownloadCount(Base):
    """Downloads of one file on one UTC day (app workers add their batched counts to the row)."""

    __tablename__ = "download_counts"

    file_id: Mapped[int] = mapped_column(ForeignKey("files.id"), primary_key=True)
    day: Mapped[dt.date] = mapped_column(Date, primary_key=True)
    count: Mapped[int] = mapped_column(Integer, default=0)


class RateEvent(Base):
    """One counted event (a write, a failed authentication) of one key, shared by every app worker."""

    __tablename__ = "rate_events"
    __table_args__ = (Index("ix_rate_events_scope_key_at", "scope", "key", "at"),
                      Index("ix_rate_events_scope_at", "scope", "at"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    scope: Mapped[str] = mapped_column(String(40))
    key: Mapped[str] = mapped_column(String(200))
    at: Mapped[float] = mapped_column(Float)  # Unix time: the workers' clocks are the host's (or NTP'd) clock


class DamagedBlob(Base):
    """A stored blob whose bytes do not hash to its content address, or that is missing: served to nobody.

    Written by ``vf-hub admin verify`` (``services/verify.py``); removed when the blob is whole again (an
    identical re-upload replaced it, or a later verify found it restored). The bytes are never deleted.
    """

    __tablename__ = "damaged_blobs"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)  # the content address (what it should be)
    problem: Mapped[str] = mapped_column(String(20))  # "corrupt" or "missing"
    found_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)  # what the bytes hash to
    detected_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class EvalResult(Base):
    """One ``vf-eval`` run pushed to a version of an environment (``vf-eval ... --push``)."""

    __tablename__ = "eval_results"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    release_id: Mapped[int] = mapped_column(ForeignKey("releases.id"), index=True)
    submitted_by_id: Mapped[int] = mapped_column(ForeignKey("owners.id"))
    # The submitter may publish the project: the owner's own number, shown as such on the leaderboard.
    by_publisher: Mapped[bool] = mapped_column(default=False)
    # The run's environment was installed from one of this release's files (its sha256 matched).
    artifact_verified: Mapped[bool] = mapped_column(default=False)
    model: Mapped[str] = mapped_column(String(200))
    avg_reward: Mapped[float] = mapped_column(Float)
    std_reward: Mapped[float] = mapped_column(Float)
    num_examples: Mapped[int] = mapped_column(Integer)
    rollouts_per_example: Mapped[int] = mapped_column(Integer)
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON)  # metric name -> mean
    pass_at_k: Mapped[dict[str, Any]] = mapped_column(JSON)  # "k" -> pass@k
    # What a leaderboard row shows of the run's arguments (bounded at push); the whole metadata and the summary
    # are deferred: a page of many results never loads them, only a result's own page does.
    env_args: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # Every rollout of the run was pushed and the figures above are theirs (services/eval_rollouts.py): only then
    # can a re-scoring of a sample vouch for them.
    rollouts_complete: Mapped[bool] = mapped_column(default=False)
    run_metadata: Mapped[dict[str, Any]] = mapped_column(JSON, deferred=True)  # metadata.json, minus secrets
    summary: Mapped[str] = mapped_column(Text, default="", deferred=True)  # the table vf-eval printed
    run_date: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)

    release: Mapped[Release] = relationship()
    submitted_by: Mapped[Owner] = relationship()
    # Withdrawn with the result. Never loaded with it: a page reads one page of rollouts, or one.
    rollouts: Mapped[list[EvalRollout]] = relationship(cascade="all, delete-orphan", lazy="raise_on_sql",
                                                       passive_deletes=True)


class EvalRollout(Base):
    """One rollout of a pushed result, as its page shows it (``services/eval_rollouts.py`` bounds it at push)."""

    __tablename__ = "eval_rollouts"
    __table_args__ = (Index("ix_eval_rollouts_eval_position", "eval_id", "position", unique=True),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    eval_id: Mapped[int] = mapped_column(ForeignKey("eval_results.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)  # its place in the pushed run, from 0
    example_id: Mapped[int] = mapped_column(Integer)
    rollout_index: Mapped[int] = mapped_column(Integer)
    reward: Mapped[float | None] = mapped_column(Float, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # {"prompt": [message], "completion": [message], "metrics": {name: value}, "answer": str, "stop_condition": str}
    record: Mapped[dict[str, Any]] = mapped_column(JSON)
