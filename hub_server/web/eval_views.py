"""What an evaluation result's pages show: the run and a filtered page of its rollouts; one rollout's transcript."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from hub_server.auth.principal import Principal
from hub_server.db.records import EvalResult
from hub_server.services import catalog, eval_rollouts, evals, server_checks
from hub_server.services.catalog import ProjectView
from hub_server.services.eval_rollouts import RolloutDetail, RolloutList, Show


@dataclass(frozen=True)
class EvalPage:
    project: ProjectView
    result: evals.LeaderboardRow
    rollouts: RolloutList
    show: Show
    pages: int
    page_number: int


@dataclass(frozen=True)
class RolloutPage:
    project: ProjectView
    result: evals.LeaderboardRow
    rollout: RolloutDetail
    threshold: float


def _row(session: Session, result: EvalResult) -> evals.LeaderboardRow:
    return evals.leaderboard_row(result, server_checks.rescore_checks(session, [result.id]).get(result.id),
                                 with_summary=True)


def eval_page(session: Session, principal: Principal | None, owner: str, name: str, result_id: int, show: Show,
              page_number: int) -> EvalPage:
    """The result ``result_id`` of ``owner/name`` with the page ``page_number`` of the rollouts ``show`` selects."""
    result = eval_rollouts.visible_result(session, principal, owner, name, result_id)
    rollouts = eval_rollouts.list_rollouts(session, result, show, page_number)
    pages = max(1, -(-rollouts.matching // eval_rollouts.PAGE_SIZE))
    return EvalPage(catalog.project_view(session, principal, name, owner), _row(session, result), rollouts,
                    show, pages, page_number)


def rollout_page(session: Session, principal: Principal | None, owner: str, name: str, result_id: int,
                 position: int) -> RolloutPage:
    """One rollout of the result ``result_id`` of ``owner/name``."""
    result = eval_rollouts.visible_result(session, principal, owner, name, result_id)
    return RolloutPage(catalog.project_view(session, principal, name, owner), _row(session, result),
                       eval_rollouts.rollout_detail(session, result, position), eval_rollouts.pass_threshold(result))
