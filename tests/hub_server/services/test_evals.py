"""Eval results: who may push them, what is checked and kept, and the leaderboard's order."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from hub_server.auth.principal import Principal, authenticate
from hub_server.context import Hub
from hub_server.db.checks import MISMATCH, RESCORE, ServerCheck
from hub_server.db.models import File
from hub_server.db.records import EvalResult
from hub_server.errors import BadRequest, Forbidden, NotFound
from hub_server.services import accounts, catalog, evals
from tests.hub_server.web.envdists import publish


def metadata(model: str = "m", reward: float = 0.5, **extra: Any) -> dict[str, Any]:
    """A finished run's metadata.json, as vf-eval writes it."""
    return {"env_id": "demo-env", "model": model, "status": "complete", "avg_reward": reward, "std_reward": 0.1,
            "num_examples": 4, "rollouts_per_example": 2, "avg_metrics": {"exact_match": reward},
            "pass_at_k": {"1": reward, "2": reward}, "date": "2026-11-01T10:00:00+00:00",
            "env_args": {"seed": 1}, "config": {"model": model, "headers": ["Authorization: Bearer sk-secret"]},
            "version_info": {"verifiers": "0.3.0", "environment_package": {"distribution": "demo-env",
                                                                            "version": "0.1.0"}}, **extra}


@pytest.fixture
def alice(make_user: Callable[[str], str], upload: Callable[..., httpx.Response], tmp_path: Path) -> str:
    token = make_user("alice")
    publish(upload, token, tmp_path, "demo-env", "0.1.0")
    publish(upload, token, tmp_path, "demo-env", "0.2.0")
    return token


def principal(hub: Hub, token: str) -> Principal:
    with hub.db.read() as session:
        return authenticate(session, token)


def record(hub: Hub, token: str, meta: dict[str, Any], version: str = "0.1.0", name: str = "demo-env",
           owner: str | None = None) -> Any:
    with hub.db.write() as session:
        result = evals.record_eval(session, principal(hub, token), name, version, meta, "table", owner)
        return result.id, result.by_publisher, result.artifact_verified, dict(result.run_metadata)


def test_the_owner_pushes_a_result_and_secrets_are_dropped(hub: Hub, alice: str) -> None:
    _id, by_publisher, verified, stored = record(hub, alice, metadata())
    assert by_publisher and not verified
    assert "headers" not in stored["config"] and stored["config"]["model"] == "m"
    with hub.db.read() as session:
        [row] = evals.leaderboard(session, None, "demo-env")
    assert (row.model, row.version, row.pass_at_1, row.submitted_by, row.env_args) == ("m", "0.1.0", 0.5, "alice",
                                                                                       {"seed": 1})
    # a leaderboard row never carries the summary (a deferred column it does not load); one result does
    assert row.run_date == dt.datetime(2026, 11, 1, 10, tzinfo=dt.timezone.utc) and row.summary == ""
    with hub.db.read() as session:
        assert evals.result_row(session, None, row.id).summary == "table"


def test_a_result_from_the_installed_hub_file_is_verified(hub: Hub, alice: str) -> None:
    with hub.db.read() as session:
        wheel = next(f for f in catalog.project_view(session, None, "demo-env").files
                     if f.version == "0.1.0" and f.packagetype == "bdist_wheel")
    package = {"distribution": "demo-env", "version": "0.1.0", "archive_hashes": {"sha256": wheel.sha256}}
    _id, _by, verified, _stored = record(hub, alice, metadata(version_info={"environment_package": package}))
    assert verified
    # the same hash claimed for another version does not verify that version
    assert not record(hub, alice, metadata(version_info={"environment_package": package}), version="0.2.0")[2]


def test_community_results_are_welcome_but_marked(hub: Hub, alice: str, make_user: Callable[[str], str]) -> None:
    bob = make_user("bob")
    assert record(hub, bob, metadata("bob-model"))[1] is False


def test_leaderboard_is_best_first_and_filters_by_version(hub: Hub, alice: str) -> None:
    record(hub, alice, metadata("low", 0.2))
    record(hub, alice, metadata("high", 0.9), version="0.2.0")
    record(hub, alice, metadata("mid", 0.5))
    with hub.db.read() as session:
        assert [r.model for r in evals.leaderboard(session, None, "demo-env")] == ["high", "mid", "low"]
        assert [r.model for r in evals.leaderboard(session, None, "demo-env", version="0.1")] == ["mid", "low"]


def test_a_result_whose_re_score_mismatched_ranks_last_whatever_it_claims(hub: Hub, alice: str) -> None:
    liar, *_ = record(hub, alice, metadata("liar", 1.0))
    record(hub, alice, metadata("honest", 0.4))
    with hub.db.write() as session:  # what the worker records when the sampled rewards differ
        release_id = session.get(EvalResult, liar).release_id
        wheel = session.scalar(select(File.id).where(File.release_id == release_id,
                                                     File.packagetype == "bdist_wheel"))
        session.add(ServerCheck(kind=RESCORE, release_id=release_id, file_id=wheel, eval_id=liar, status=MISMATCH,
                                summary="rollout 0: pushed 1.0, scored 0.0", attempts=1))
    with hub.db.read() as session:
        rows = evals.leaderboard(session, None, "demo-env")
    assert [(r.model, r.rescore) for r in rows] == [("honest", ""), ("liar", MISMATCH)]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"status": "running"}, "status"),
        ({"avg_reward": "high"}, "avg_reward"),
        ({"avg_reward": float("nan")}, "avg_reward"),
        ({"model": ""}, "model"),
        ({"rollouts_per_example": 0}, "rollouts_per_example"),
        ({"avg_metrics": {"x": float("inf")}}, "avg_metrics"),
    ],
)
def test_bad_metadata_is_refused_with_the_field_named(hub: Hub, alice: str, change: dict[str, Any],
                                                      message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        record(hub, alice, {**metadata(), **change})


def test_missing_fields_unknown_versions_and_oversized_summaries(hub: Hub, alice: str) -> None:
    meta = metadata()
    del meta["avg_reward"]
    with pytest.raises(BadRequest, match="avg_reward"):
        record(hub, alice, meta)
    with pytest.raises(NotFound, match="no version 9.9"):
        record(hub, alice, metadata(), version="9.9")
    with pytest.raises(BadRequest, match="not a PEP 440"):
        record(hub, alice, metadata(), version="latest!")
    with pytest.raises(NotFound):
        record(hub, alice, metadata(), name="no-such-env")
    with pytest.raises(NotFound):
        record(hub, alice, metadata(), owner="bob")  # the project exists, but not under that owner
    with hub.db.write() as session, pytest.raises(BadRequest, match="summary"):
        evals.record_eval(session, principal(hub, alice), "demo-env", "0.1.0", metadata(), "x" * 70_000)


def test_tokens_that_may_not_push(hub: Hub, alice: str, make_user: Callable[[str], str]) -> None:
    with hub.db.write() as session:
        user = accounts.get_owner(session, "alice")
        read_only = accounts.issue_token(session, user, "read", expires_in=dt.timedelta(days=1))
        other_project = accounts.issue_token(session, user, "publish", expires_in=dt.timedelta(days=1),
                                             scope_project="something-else")
    for token in (read_only, other_project):
        with pytest.raises(Forbidden, match="publish token"):
            record(hub, token, metadata())


def test_private_projects_are_not_found_for_others(hub: Hub, alice: str, make_user: Callable[[str], str]) -> None:
    with hub.db.write() as session:
        catalog.set_private(session, principal(hub, alice), "alice", "demo-env", True)
    bob = make_user("bob")
    with pytest.raises(NotFound):
        record(hub, bob, metadata())
    record(hub, alice, metadata())
    with hub.db.read() as session, pytest.raises(NotFound):
        evals.leaderboard(session, principal(hub, bob), "demo-env")


def test_deleting_is_for_the_submitter_and_the_publishers(hub: Hub, alice: str,
                                                          make_user: Callable[[str], str]) -> None:
    bob, carol = make_user("bob"), make_user("carol")
    by_bob = record(hub, bob, metadata("bob-model"))[0]
    with hub.db.write() as session, pytest.raises(Forbidden):
        evals.delete_eval(session, principal(hub, carol), by_bob)
    with hub.db.write() as session:
        evals.delete_eval(session, principal(hub, alice), by_bob)  # the owner moderates
    with hub.db.write() as session, pytest.raises(NotFound):
        evals.delete_eval(session, principal(hub, bob), by_bob)


def test_only_a_whole_run_re_scored_the_same_is_verified(hub: Hub, alice: str) -> None:
    from hub_server.db.checks import RESCORED
    from hub_server.services.eval_rollouts import PushedRollout, store_rollouts

    ids = {}
    for name, examples in (("whole", 1), ("partial", 50)):
        with hub.db.write() as session:
            meta = {**metadata(name, 1.0), "num_examples": examples, "rollouts_per_example": 1}
            result = evals.record_eval(session, principal(hub, alice), "demo-env", "0.1.0", meta)
            store_rollouts(session, result, [PushedRollout(example_id=0, reward=1.0)])
            wheel = session.scalar(select(File.id).where(File.release_id == result.release_id,
                                                         File.packagetype == "bdist_wheel"))
            session.add(ServerCheck(kind=RESCORE, release_id=result.release_id, file_id=wheel, eval_id=result.id,
                                    status=RESCORED, summary="1 sampled rewards match", attempts=1))
            ids[name] = result.id
    with hub.db.read() as session:
        rows = {r.id: r for r in evals.leaderboard(session, None, "demo-env")}
    assert rows[ids["whole"]].verified and not rows[ids["partial"]].verified
