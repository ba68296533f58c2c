"""Which groups of a pushed result the worker re-scores: whole groups, those with an errored rollout too (never
sampled, they were a place to hide), and a draw a pusher cannot predict (it was seeded by the result's id)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
from fastapi.testclient import TestClient

from hub_server.context import Hub
from hub_server.db.checks import MISMATCH
from hub_server.services import server_checks
from hub_server.worker.loop import WorkerConfig, run_claimed, sample_groups
from tests.hub_server.conftest import bearer
from tests.hub_server.web.envdists import publish


def _rows(groups: int, per_group: int = 2, errored: tuple[int, ...] = ()) -> list[Any]:
    return [SimpleNamespace(example_id=g, position=g * per_group + r, reward=1.0,
                            error="ModelError" if g in errored and r == 0 else None)
            for g in range(groups) for r in range(per_group)]


def test_whole_groups_are_sampled_errored_rollouts_and_all() -> None:
    rows = _rows(10, errored=(3, 7))
    for row in rows:  # group 5: every rollout errored (nothing to score); group 8: one never scored
        if row.example_id == 5:
            row.error = "ModelError"
        if row.example_id == 8 and row.position % 2:
            row.reward = None
    chosen = sample_groups(rows, wanted=100, rng=random.Random(0))
    assert sorted(g[0].example_id for g in chosen) == [0, 1, 2, 3, 4, 6, 7, 9]  # 3 and 7 hold an errored one
    assert all([r.position for r in g] == sorted(r.position for r in g) and len(g) == 2 for g in chosen)
    assert sum(len(g) for g in sample_groups(_rows(10), wanted=5, rng=random.Random(0))) == 6  # whole groups


def test_the_sample_is_drawn_anew_each_time() -> None:
    rows = _rows(50)
    draws = {tuple(g[0].example_id for g in sample_groups(rows, wanted=8)) for _ in range(10)}
    assert len(draws) > 1  # the same result, sampled again, gets other groups (50 choose 4 orders)


def test_an_errored_rollout_pushed_with_a_reward_is_a_mismatch_before_any_sandbox(
        hub: Hub, make_user: Callable[[str], str], upload: Callable[..., httpx.Response], client: TestClient,
        tmp_path: Path) -> None:
    token = make_user("alice")
    publish(upload, token, tmp_path, "demo-env", "0.1.0")
    row = {"example_id": 0, "answer": "a", "prompt": [{"role": "user", "content": "q"}],
           "completion": [{"role": "assistant", "content": "a"}]}
    metadata = {"model": "m", "status": "complete", "avg_reward": 1.0, "num_examples": 1, "rollouts_per_example": 2}
    pushed = client.post("/api/v1/evals", headers=bearer(token), json={
        "project": "demo-env", "version": "0.1.0", "metadata": metadata,
        "rollouts": [{**row, "reward": 1.0}, {**row, "rollout_index": 1, "reward": 1.0, "error": "ModelError: 503"}]})
    assert pushed.status_code == 201, pushed.text
    claimed = None
    while (found := server_checks.claim(hub.db, stale_after_s=3600)) is not None:
        claimed = found if found.kind == "rescore" else claimed
    assert claimed is not None
    status, summary, _ = asyncio.run(run_claimed(hub.db, hub.storage, None,  # type: ignore[arg-type]
                                                 WorkerConfig(image_dir=tmp_path), claimed))
    assert (status, summary) == (MISMATCH, "rollout 1 errored but was pushed with reward 1.0: an errored rollout "
                                           "scores 0")
