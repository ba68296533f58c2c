"""An eval result's pages: its rollouts, filtered and paged, and one rollout's transcript, from what was pushed.

Pushed through the real API (``POST /api/v1/evals``), read through the real pages; hostile text is shown as text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from hub_server.context import Hub
from hub_server.db import EvalRollout
from tests.hub_server.conftest import bearer
from tests.hub_server.web.envdists import publish

META = {"model": "m1", "status": "complete", "avg_reward": 0.5, "std_reward": 0.1, "num_examples": 4,
        "rollouts_per_example": 1, "avg_metrics": {"correct": 0.5}, "pass_at_k": {"1": 0.5},
        "config": {"pass_threshold": 0.5}}
XSS = "<script>alert('x')</script>"


def rollout(example: int, reward: float | None, *, error: str | None = None, reply: str = "done") -> dict[str, Any]:
    call = {"id": "call_7", "name": "lookup", "arguments": json.dumps({"q": XSS})}
    return {
        "example_id": example, "rollout_index": 0, "reward": reward, "metrics": {"correct": reward}, "error": error,
        "stop_condition": "has_error" if error else "no_tools_called", "answer": f"answer {example}",
        "prompt": [{"role": "system", "content": "be brief"}, {"role": "user", "content": f"question {example}"}],
        "completion": [{"role": "assistant", "content": "", "tool_calls": [call]},
                       {"role": "tool", "content": f"result {XSS}", "tool_call_id": "call_7"},
                       {"role": "assistant", "content": reply}],
    }


@pytest.fixture
def token(make_user: Callable[[str], str], upload: Callable[..., httpx.Response], tmp_path: Path) -> str:
    value = make_user("alice")
    publish(upload, value, tmp_path, "demo-env", "0.1.0")
    publish(upload, value, tmp_path, "other-env", "0.1.0")
    return value


def push(client: TestClient, token: str, rollouts: list[dict[str, Any]], project: str = "demo-env",
         **metadata: Any) -> httpx.Response:
    body = {"project": project, "version": "0.1.0", "metadata": {**META, **metadata}, "rollouts": rollouts}
    return client.post("/api/v1/evals", json=body, headers=bearer(token))


def links(page: str) -> list[str]:
    return re.findall(r'href="(/alice/demo-env/evals/\d+/rollouts/\d+)"', page)


def test_a_result_lists_its_rollouts_with_counts_and_filters(client: TestClient, token: str) -> None:
    pushed = push(client, token, [rollout(0, 1.0), rollout(1, 0.0), rollout(2, None, error="ModelError: 503"),
                                  rollout(3, 0.5)])
    assert pushed.status_code == 201, pushed.text
    answer = pushed.json()
    assert answer["rollouts"] == 4 and answer["url"].endswith(f"/alice/demo-env/evals/{answer['id']}")
    url = f"/alice/demo-env/evals/{answer['id']}"
    page = client.get(url).text
    assert len(links(page)) == 4
    for kind, count in (("all", 4), ("passed", 2), ("failed", 1), ("errored", 1)):
        assert f'{kind} <span class="count">{count}</span>' in page
    errored = client.get(url, params={"show": "errored"}).text
    assert links(errored) == [f"{url}/rollouts/2"] and "ModelError: 503" in errored
    assert links(client.get(url, params={"show": "passed"}).text) == [f"{url}/rollouts/0", f"{url}/rollouts/3"]
    assert len(links(client.get(url, params={"show": "<b>nonsense"}).text)) == 4  # an unknown filter shows all
    board = client.get("/alice/demo-env").text
    assert f'href="{url}"' in board  # the leaderboard row links to it


def test_a_rollout_shows_every_message_tool_call_and_result_as_text(client: TestClient, token: str) -> None:
    result = push(client, token, [rollout(0, 1.0), rollout(1, 0.0, reply="[bold]x[/] **y**")]).json()["id"]
    page = client.get(f"/alice/demo-env/evals/{result}/rollouts/1")
    assert page.status_code == 200
    text = page.text
    assert "<script>alert" not in text and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in text
    assert "tool call · call_7" in text and "lookup({&#34;q&#34;: " in text and "tool result · call_7" in text
    assert "question 1" in text and "be brief" in text and "[bold]x[/] **y**" in text and "answer 1" in text
    assert re.search(r"<code>correct</code></th><td class=\"num\">0\.000", text)
    assert f'href="/alice/demo-env/evals/{result}/rollouts/0">← previous' in text and "next →" not in text


def test_errors_show_on_the_rollout_and_long_runs_are_paged(client: TestClient, token: str) -> None:
    many = [rollout(i, float(i % 2)) for i in range(120)] + [rollout(120, None, error="Boom: <i>raw</i>")]
    result = push(client, token, many, num_examples=121).json()["id"]
    url = f"/alice/demo-env/evals/{result}"
    assert len(links(client.get(url).text)) == 50
    last = client.get(url, params={"page": 3}).text
    assert len(links(last)) == 21 and "page 3 of 3" in last
    assert "No all rollouts on this page" in client.get(url, params={"page": 9}).text
    shown = client.get(f"{url}/rollouts/120").text
    assert 'id="rollout-error"' in shown and "Boom: &lt;i&gt;raw&lt;/i&gt;" in shown


@pytest.mark.parametrize("path", ["/alice/demo-env/evals/RESULT/rollouts/99", "/alice/demo-env/evals/abc",
                                  "/alice/demo-env/evals/99999", "/alice/demo-env/evals/RESULT/rollouts/-1",
                                  "/alice/other-env/evals/RESULT", "/alice/demo-env/evals/" + "9" * 40])
def test_what_does_not_exist_is_a_not_found_page(client: TestClient, token: str, path: str) -> None:
    result = push(client, token, [rollout(0, 1.0)]).json()["id"]
    page = client.get(path.replace("RESULT", str(result)))
    assert page.status_code == 404 and "Not found" in page.text


def test_a_private_projects_results_are_not_found_for_others(client: TestClient, token: str) -> None:
    result = push(client, token, [rollout(0, 1.0)]).json()["id"]
    client.patch("/api/v1/projects/alice/demo-env", json={"private": True}, headers=bearer(token))
    assert client.get(f"/alice/demo-env/evals/{result}").status_code == 404
    assert client.get(f"/alice/demo-env/evals/{result}/rollouts/0").status_code == 404


def test_a_result_pushed_without_rollouts_says_so(client: TestClient, token: str) -> None:
    result = push(client, token, []).json()["id"]
    assert "pushed without its rollouts" in client.get(f"/alice/demo-env/evals/{result}").text


@pytest.mark.parametrize("rollouts, where", [
    ([rollout(0, 1.0)] * 1001, "rollouts: List should have at most 1000 items"),
    ([{**rollout(0, 1.0), "answer": "x" * 20_000}], "rollouts.0.answer"),
    ([{**rollout(0, 1.0), "prompt": [{"role": "user", "content": "q"}] * 201}], "rollouts.0.prompt"),
    ([{**rollout(0, 1.0), "example_id": -1}], "rollouts.0.example_id"),
    ([{"reward": 1.0}], "rollouts.0.example_id: Field required"),
    ([{**rollout(0, 1.0), "completion": [{"content": "no role"}]}], "rollouts.0.completion.0.role"),
])
def test_bad_rollouts_are_refused_naming_the_field(client: TestClient, token: str, rollouts: list[dict[str, Any]],
                                                   where: str) -> None:
    answer = push(client, token, rollouts)
    assert answer.status_code == 400 and where in answer.json()["detail"], answer.text
    assert client.get("/api/v1/projects/alice/demo-env/evals").json()["results"] == []  # nothing kept


def test_a_non_finite_reward_is_refused(client: TestClient, token: str) -> None:
    body = json.dumps({"project": "demo-env", "version": "0.1.0", "metadata": META,
                       "rollouts": [{**rollout(0, 1.0), "reward": float("nan")}]})  # Python's json writes NaN
    answer = client.post("/api/v1/evals", content=body, headers=bearer(token))
    assert answer.status_code == 400 and "rollouts.0.reward" in answer.json()["detail"], answer.text


def test_withdrawing_a_result_removes_its_rollouts(client: TestClient, token: str, hub: Hub) -> None:
    result = push(client, token, [rollout(0, 1.0), rollout(1, 0.0)]).json()["id"]
    assert client.delete(f"/api/v1/evals/{result}", headers=bearer(token)).status_code == 200
    with hub.db.read() as session:
        assert session.scalar(select(func.count()).select_from(EvalRollout)) == 0
