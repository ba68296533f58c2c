"""Which groups of a pushed result the worker re-scores: whole groups, never errored ones, and a draw a pusher
cannot predict (it was seeded by the result's id, so a pusher could make only the sampled groups honest)."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

from hub_server.worker.loop import sample_groups


def _rows(groups: int, per_group: int = 2, errored: tuple[int, ...] = ()) -> list[Any]:
    return [SimpleNamespace(example_id=g, position=g * per_group + r, reward=1.0,
                            error="ModelError" if g in errored and r == 0 else None)
            for g in range(groups) for r in range(per_group)]


def test_whole_groups_are_sampled_and_errored_ones_left_out() -> None:
    chosen = sample_groups(_rows(10, errored=(3, 7)), wanted=100, rng=random.Random(0))
    assert sorted(g[0].example_id for g in chosen) == [0, 1, 2, 4, 5, 6, 8, 9]
    assert all([r.position for r in g] == sorted(r.position for r in g) and len(g) == 2 for g in chosen)
    assert sum(len(g) for g in sample_groups(_rows(10), wanted=5, rng=random.Random(0))) == 6  # whole groups


def test_the_sample_is_drawn_anew_each_time() -> None:
    rows = _rows(50)
    draws = {tuple(g[0].example_id for g in sample_groups(rows, wanted=8)) for _ in range(10)}
    assert len(draws) > 1  # the same result, sampled again, gets other groups (50 choose 4 orders)
