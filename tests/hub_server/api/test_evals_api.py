"""The eval results API: ``POST /api/v1/evals`` (what ``vf-eval --push`` sends) and the leaderboard JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.hub_server.conftest import bearer
from tests.hub_server.web.envdists import publish

META = {"model": "m1", "status": "complete", "avg_reward": 0.5, "std_reward": 0.0, "num_examples": 2,
        "rollouts_per_example": 1, "avg_metrics": {}, "pass_at_k": {"1": 0.5}}


@pytest.fixture
def token(make_user: Callable[[str], str], upload: Callable[..., httpx.Response], tmp_path: Path) -> str:
    value = make_user("alice")
    publish(upload, value, tmp_path, "demo-env", "0.1.0")
    return value


def body(**changes: Any) -> dict[str, Any]:
    return {"project": "demo-env", "version": "0.1.0", "metadata": META, "summary": "s", **changes}


def test_push_then_read_the_leaderboard(client: TestClient, token: str) -> None:
    pushed = client.post("/api/v1/evals", json=body(owner="alice"), headers=bearer(token))
    assert pushed.status_code == 201, pushed.text
    answer = pushed.json()
    assert answer["url"] == f"http://testserver/alice/demo-env/evals/{answer['id']}" and answer["by_publisher"] is True
    assert answer["rollouts"] == 0
    results = client.get("/api/v1/projects/alice/demo-env/evals").json()["results"]
    assert [(r["model"], r["version"], r["avg_reward"], r["submitted_by"]) for r in results] == [
        ("m1", "0.1.0", 0.5, "alice")]
    assert client.get("/api/v1/projects/alice/demo-env/evals", params={"version": "0.2.0"}).json() == {
        "results": [], "total": 0, "offset": 0, "limit": 100}
    assert results[0]["summary"] == ""  # a list never carries summaries; the result's own route does
    assert client.get(f"/api/v1/evals/{answer['id']}").json()["summary"] == "s"
    deleted = client.delete(f"/api/v1/evals/{answer['id']}", headers=bearer(token))
    assert deleted.status_code == 200 and client.get("/api/v1/projects/alice/demo-env/evals").json()["results"] == []


def test_the_leaderboard_pages_in_sql_and_the_page_shows_the_best_hundred(client: TestClient, token: str) -> None:
    for i in range(103):
        pushed = client.post("/api/v1/evals", headers=bearer(token),
                             json=body(metadata={**META, "model": f"m{i}", "avg_reward": i / 200}))
        assert pushed.status_code == 201, pushed.text
    page = client.get("/api/v1/projects/alice/demo-env/evals", params={"limit": 2, "offset": 1}).json()
    assert page["total"] == 103 and [r["model"] for r in page["results"]] == ["m101", "m100"]
    assert client.get("/api/v1/projects/alice/demo-env/evals", params={"limit": 0}).status_code == 422
    html = client.get("/alice/demo-env").text
    assert "The best 100 of 103 results" in html and "m102" in html and ">m2<" not in html


@pytest.mark.parametrize(
    "payload, status, message",
    [
        (body(metadata={**META, "status": "running"}), 400, "status"),
        (body(version="7.0"), 404, "no version 7.0"),
        (body(project="unknown-env"), 404, "no such project"),
        (body(owner="mallory"), 404, "no such project"),
        ({"project": "demo-env"}, 400, "version"),
        (body(summary="x" * 70_000), 400, "summary"),
        (body(metadata={**META, **{f"k{i}": 1 for i in range(100)}}), 400, "keys"),
        (body(metadata={**META, "extra": "x" * 300_000}), 400, "bytes as JSON"),
        (body(metadata={**META, "deep": json.loads("[" * 30 + "]" * 30)}), 400, "nested deeper"),
        (body(metadata={**META, "env_args": {"blob": "x" * 9000}}), 400, "env_args"),
    ],
)
def test_bad_pushes_are_refused_with_a_reason(client: TestClient, token: str, payload: dict[str, Any], status: int,
                                              message: str) -> None:
    answer = client.post("/api/v1/evals", json=payload, headers=bearer(token))
    assert answer.status_code == status and message in answer.json()["detail"], answer.text


def test_no_token_bad_token_bad_json_and_huge_bodies(client: TestClient, token: str) -> None:
    assert client.post("/api/v1/evals", json=body()).status_code == 401
    assert client.post("/api/v1/evals", json=body(), headers=bearer("vfh_nope")).status_code == 403
    broken = client.post("/api/v1/evals", content=b"{not json", headers=bearer(token))
    assert broken.status_code == 400 and "must be JSON" in broken.json()["detail"]
    huge = json.dumps(body(metadata={**META, "padding": "x" * 17_000_000}))
    too_large = client.post("/api/v1/evals", content=huge, headers=bearer(token))
    assert too_large.status_code == 413 and "larger than" in too_large.json()["detail"]
    # a body nested deeper than the parser goes, and one that is not UTF-8: 400s that say so, not 500s
    deep = client.post("/api/v1/evals", content=b"[" * 100_000 + b"]" * 100_000, headers=bearer(token))
    assert deep.status_code == 400 and "nested too deeply" in deep.json()["detail"]
    latin = client.post("/api/v1/evals", content=json.dumps(body(summary="é")).encode().replace(b"\\u00e9", b"\xe9"),
                        headers=bearer(token))
    assert latin.status_code == 400 and "UTF-8" in latin.json()["detail"], latin.text
    assert client.delete("/api/v1/evals/12345", headers=bearer(token)).status_code == 404
    assert client.get("/api/v1/projects/alice/unknown/evals").status_code == 404


def _rollout(example: int, reward: float) -> dict[str, Any]:
    return {"example_id": example, "reward": reward, "answer": "a", "prompt": [{"role": "user", "content": "q"}],
            "completion": [{"role": "assistant", "content": "a"}]}


def test_figures_must_be_the_pushed_rollouts_when_all_of_them_came(client: TestClient, token: str) -> None:
    one = {**META, "avg_reward": 1.0, "num_examples": 1, "rollouts_per_example": 1}
    # the attack: one rollout of reward 0.0 with metadata claiming 1.0
    lying = client.post("/api/v1/evals", json=body(metadata=one, rollouts=[_rollout(0, 0.0)]), headers=bearer(token))
    assert lying.status_code == 400 and "avg_reward is 1.0, but the pushed rollouts' rewards average 0.0" in lying.text
    too_many = client.post("/api/v1/evals", json=body(metadata=one, rollouts=[_rollout(0, 1.0), _rollout(1, 1.0)]),
                           headers=bearer(token))
    assert too_many.status_code == 400 and "2 rollouts pushed for a run of 1 examples" in too_many.text
    honest = client.post("/api/v1/evals", json=body(metadata=one, rollouts=[_rollout(0, 1.0)]), headers=bearer(token))
    # a run pushed in part (the client cuts big runs) is accepted; its figures stay the pusher's word
    partial = client.post("/api/v1/evals", json=body(metadata={**one, "num_examples": 500},
                                                     rollouts=[_rollout(0, 0.0)]), headers=bearer(token))
    assert honest.status_code == partial.status_code == 201, (honest.text, partial.text)
    rows = {r["id"]: r for r in client.get("/api/v1/projects/alice/demo-env/evals").json()["results"]}
    assert not rows[honest.json()["id"]]["verified"] and not rows[partial.json()["id"]]["verified"]  # not re-scored
