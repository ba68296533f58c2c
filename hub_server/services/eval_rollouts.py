"""The rollouts pushed with an evaluation result, and what a result's pages read of them.

``vf-eval --push`` sends the run's rollouts (its ``results.jsonl``, cut to the limits below by the client) beside
its metadata; each is stored as one row, so a page reads one page of rollouts, or one rollout, never the whole
run. Every field is bounded here whatever the client did: a push over a limit is refused with the limit named.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from hub_server.auth.principal import Principal
from hub_server.db.models import Project, Release
from hub_server.db.records import EvalResult, EvalRollout
from hub_server.errors import BadRequest, NotFound
from hub_server.services.catalog import project_view

MAX_ROLLOUTS = 1000
MAX_MESSAGES = 200  # per prompt or completion
MAX_TEXT = 16 * 1024  # characters of one message, answer or tool-call arguments
MAX_ERROR = 4000
PAGE_SIZE = 50
Show = Literal["all", "passed", "failed", "errored"]
SHOWS: tuple[Show, ...] = ("all", "passed", "failed", "errored")


class ToolCall(BaseModel):
    id: str | None = Field(None, max_length=200)
    name: str = Field(max_length=200)
    arguments: str = Field("", max_length=MAX_TEXT)


class Message(BaseModel):
    """One chat message as the page shows it: the text of its content, its tool calls, the call it answers."""

    role: str = Field(max_length=32)
    content: str = Field("", max_length=MAX_TEXT)
    tool_calls: list[ToolCall] = Field(default_factory=list, max_length=64)
    tool_call_id: str | None = Field(None, max_length=200)


class PushedRollout(BaseModel):
    """One rollout of a pushed run (``vf-eval``'s ``verifiers.eval.push.rollout_records`` writes these)."""

    model_config = ConfigDict(extra="ignore")

    example_id: int = Field(ge=0, le=2**31 - 1)
    rollout_index: int = Field(0, ge=0, le=2**31 - 1)
    reward: float | None = Field(None, allow_inf_nan=False)
    metrics: dict[str, float | None] = Field(default_factory=dict, max_length=100)
    error: str | None = Field(None, max_length=MAX_ERROR)
    stop_condition: str | None = Field(None, max_length=100)
    answer: str = Field("", max_length=MAX_TEXT)
    prompt: list[Message] = Field(default_factory=list, max_length=MAX_MESSAGES)
    completion: list[Message] = Field(default_factory=list, max_length=MAX_MESSAGES)

    @field_validator("metrics")
    @classmethod
    def _finite(cls, metrics: dict[str, float | None]) -> dict[str, float | None]:
        if any(len(name) > 200 for name in metrics):
            raise ValueError("metric names are at most 200 characters")
        return {name: v if v is None or math.isfinite(v) else None for name, v in metrics.items()}


REWARD_TOLERANCE = 1e-9


def check_figures(result: EvalResult, rollouts: list[PushedRollout]) -> bool:
    """Whether ``rollouts`` are every rollout of the result's run; when they are, the result's figures must be
    theirs (:class:`BadRequest` otherwise, nothing stored). A leaderboard vouches for a figure only then: one
    rollout of reward 0.0 pushed with ``avg_reward: 1.0, num_examples: 500`` showed "re-scored · 1.000"."""
    expected = result.num_examples * result.rollouts_per_example
    if len(rollouts) > expected:
        raise BadRequest(f"{len(rollouts)} rollouts pushed for a run of {result.num_examples} examples × "
                         f"{result.rollouts_per_example}")
    if not rollouts or len(rollouts) < expected:
        return False  # the client cut the run to fit (or sent none): its figures stay its own word
    examples = len({r.example_id for r in rollouts})
    if examples != result.num_examples:
        raise BadRequest(f"num_examples is {result.num_examples}, but the pushed rollouts hold {examples} examples")
    scored = [r.reward if r.reward is not None else 0.0 for r in rollouts if r.error is None]
    mean = math.fsum(scored) / len(scored) if scored else 0.0
    if abs(mean - result.avg_reward) > REWARD_TOLERANCE:
        raise BadRequest(f"avg_reward is {result.avg_reward}, but the pushed rollouts' rewards average {mean} "
                         "(errored rollouts left out, as vf-eval does)")
    return True


def store_rollouts(session: Session, result: EvalResult, rollouts: list[PushedRollout]) -> None:
    """Attach ``rollouts`` (already validated) to a new result, in the order they came, after checking the
    result's figures against them (:func:`check_figures`)."""
    result.rollouts_complete = check_figures(result, rollouts)
    session.add_all(
        EvalRollout(eval_id=result.id, position=i, example_id=r.example_id, rollout_index=r.rollout_index,
                    reward=r.reward, error=r.error,
                    record=r.model_dump(include={"prompt", "completion", "metrics", "answer", "stop_condition"}))
        for i, r in enumerate(rollouts))


@dataclass(frozen=True)
class RolloutRow:
    """A rollout as a result's list shows it."""

    position: int
    example_id: int
    rollout_index: int
    reward: float | None
    error: str | None


@dataclass(frozen=True)
class RolloutList:
    rows: list[RolloutRow]
    counts: dict[Show, int]  # rows of each kind, over every page
    matching: int  # rows the filter selects, over every page
    threshold: float


@dataclass(frozen=True)
class RolloutDetail:
    row: RolloutRow
    prompt: list[dict[str, Any]]
    completion: list[dict[str, Any]]
    metrics: dict[str, float | None]
    answer: str
    stop_condition: str | None
    previous: int | None
    next: int | None


def visible_result(session: Session, principal: Principal | None, owner: str, name: str, result_id: int) -> EvalResult:
    """The result ``result_id`` of ``owner/name``, if the caller may see the project (else NotFound)."""
    view = project_view(session, principal, name, owner)
    result = session.scalar(select(EvalResult).join(Release, EvalResult.release_id == Release.id)
                            .join(Project, Release.project_id == Project.id)
                            .where(EvalResult.id == result_id, Project.normalized == view.normalized))
    if result is None:
        raise NotFound(f"{view.owner}/{view.name} has no eval result {result_id}")
    return result


def pass_threshold(result: EvalResult) -> float:
    """The run's own ``--pass-threshold`` (what its pass@k used), else vf-eval's default 0.5."""
    config = result.run_metadata.get("config")
    value = config.get("pass_threshold") if isinstance(config, dict) else None
    return float(value) if isinstance(value, (int, float)) and 0 <= value <= 1 else 0.5


def _where(result: EvalResult, show: Show, threshold: float) -> list[Any]:
    clauses: list[Any] = [EvalRollout.eval_id == result.id]
    if show == "errored":
        clauses.append(EvalRollout.error.is_not(None))
    elif show == "passed":
        clauses += [EvalRollout.error.is_(None), EvalRollout.reward >= threshold]
    elif show == "failed":
        clauses += [EvalRollout.error.is_(None), (EvalRollout.reward < threshold) | EvalRollout.reward.is_(None)]
    return clauses


def _row(rollout: EvalRollout) -> RolloutRow:
    return RolloutRow(rollout.position, rollout.example_id, rollout.rollout_index, rollout.reward, rollout.error)


def list_rollouts(session: Session, result: EvalResult, show: Show = "all", page: int = 1) -> RolloutList:
    """One page of the result's rollouts that ``show`` selects, in push order, with the count of each kind."""
    threshold = pass_threshold(result)
    counts = {kind: session.scalar(select(func.count()).select_from(EvalRollout)
                                   .where(*_where(result, kind, threshold))) or 0 for kind in SHOWS}
    columns = (EvalRollout.position, EvalRollout.example_id, EvalRollout.rollout_index, EvalRollout.reward,
               EvalRollout.error)  # never the transcripts: a list page reads none of them
    found = session.execute(select(*columns).where(*_where(result, show, threshold)).order_by(EvalRollout.position)
                            .limit(PAGE_SIZE).offset((page - 1) * PAGE_SIZE))
    rows = [RolloutRow(*values) for values in found]
    return RolloutList(rows, counts, counts[show], threshold)


def rollout_detail(session: Session, result: EvalResult, position: int) -> RolloutDetail:
    """One rollout's transcript, with the positions of its neighbours in the run."""
    rollout = session.scalar(select(EvalRollout).where(EvalRollout.eval_id == result.id,
                                                       EvalRollout.position == position))
    if rollout is None:
        raise NotFound(f"eval result {result.id} has no rollout {position}")
    neighbour = select(func.max(EvalRollout.position)).where(EvalRollout.eval_id == result.id,
                                                            EvalRollout.position < position)
    later = select(func.min(EvalRollout.position)).where(EvalRollout.eval_id == result.id,
                                                        EvalRollout.position > position)
    record = rollout.record
    return RolloutDetail(_row(rollout), list(record.get("prompt") or []), list(record.get("completion") or []),
                         dict(record.get("metrics") or {}), str(record.get("answer") or ""),
                         record.get("stop_condition"), session.scalar(neighbour), session.scalar(later))


__all__ = ["MAX_ROLLOUTS", "PAGE_SIZE", "SHOWS", "Message", "PushedRollout", "RolloutDetail", "RolloutList",
           "RolloutRow", "Show", "ToolCall", "list_rollouts", "pass_threshold", "rollout_detail", "store_rollouts",
           "visible_result"]
