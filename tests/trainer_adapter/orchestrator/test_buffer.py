"""The difficulty buffer: pools, uniform-group and online filters, sampling shares, newest-first pops."""

from __future__ import annotations

from collections import Counter

import pytest
from pydantic import ValidationError

from trainer_adapter.orchestrator.buffer import BufferConfig, DifficultyBuffer
from trainer_adapter.orchestrator.rollouts import Rollout, RolloutGroup


def _group(example_id: int, rewards: list[float], version: int = 0) -> RolloutGroup:
    return RolloutGroup(example_id, [Rollout(r, []) for r in rewards], version)


def test_uniform_groups_are_dropped_and_counted() -> None:
    buffer = DifficultyBuffer(range(4), BufferConfig())
    assert buffer.add(_group(0, [1.0, 1.0])) is False
    assert buffer.add(_group(1, [0.0, 0.0, 0.0])) is False
    assert buffer.add(_group(2, [0.3, 0.3])) is False
    assert buffer.add(_group(3, [0.0, 1.0])) is True
    assert buffer.filtered == Counter(uniform=3)
    assert [g.example_id for g in buffer.groups] == [3]


def test_uniform_groups_kept_when_asked() -> None:
    buffer = DifficultyBuffer([0], BufferConfig(drop_uniform_groups=False))
    assert buffer.add(_group(0, [1.0, 1.0])) is True


def test_thresholds_file_examples_and_online_filter_drops_them() -> None:
    config = BufferConfig(easy_threshold=0.75, hard_threshold=0.25, online_filter=True)
    buffer = DifficultyBuffer(range(4), config)
    assert buffer.add(_group(0, [1.0, 1.0, 1.0, 0.0])) is False  # mean 0.75: easy (inclusive)
    assert buffer.add(_group(1, [0.0, 0.0, 0.0, 1.0])) is False  # mean 0.25: hard (inclusive)
    assert buffer.add(_group(2, [0.0, 1.0])) is True  # normal
    assert buffer.pools() == {"easy": [0], "normal": [2, 3], "hard": [1]}
    assert buffer.filtered == Counter(easy=1, hard=1)


def test_without_online_filter_classified_groups_still_train() -> None:
    buffer = DifficultyBuffer(range(2), BufferConfig(easy_threshold=0.5))
    assert buffer.add(_group(0, [1.0, 0.0])) is True
    assert buffer.difficulty[0] == "easy"


def test_sample_problems_honours_shares_and_falls_back_to_normal() -> None:
    config = BufferConfig(easy_threshold=0.9, hard_threshold=0.1, easy_fraction=0.25, hard_fraction=0.25)
    buffer = DifficultyBuffer(range(10), config, seed=1)
    buffer.difficulty.update({0: "easy", 1: "hard"})
    picked = buffer.sample_problems(8)
    assert len(picked) == 8
    assert picked.count(0) == 2 and picked.count(1) == 2
    assert all(p in range(2, 10) for p in picked[4:])
    buffer.difficulty[0] = "normal"  # empty easy pool: its share comes from normal
    picked = buffer.sample_problems(8)
    assert picked[:2] == [1, 1] and len(picked) == 8
    assert all(p != 1 for p in picked[2:])


def test_sample_problems_is_seeded() -> None:
    a = DifficultyBuffer(range(100), BufferConfig(), seed=3).sample_problems(20)
    b = DifficultyBuffer(range(100), BufferConfig(), seed=3).sample_problems(20)
    assert a == b


def test_pop_takes_newest_whole_groups_that_fit() -> None:
    buffer = DifficultyBuffer(range(3), BufferConfig())
    for i in range(3):
        buffer.add(_group(i, [0.0, 1.0, 0.5]))
    taken = buffer.pop(7)
    assert [g.example_id for g in taken] == [2, 1]
    assert buffer.num_rollouts == 3
    assert buffer.pop(2) == []


def test_state_round_trips() -> None:
    buffer = DifficultyBuffer(range(3), BufferConfig(easy_threshold=0.5))
    buffer.add(_group(1, [1.0, 1.0]))
    again = DifficultyBuffer(range(3), BufferConfig())
    again.load_state_dict(buffer.state_dict())
    assert again.difficulty == {0: "normal", 1: "easy", 2: "normal"}
    assert again.filtered == Counter(uniform=1)


@pytest.mark.parametrize(
    "kwargs",
    [{"easy_fraction": 0.7, "hard_fraction": 0.4}, {"easy_threshold": 0.2, "hard_threshold": 0.5},
     {"easy_fraction": -0.1}, {"typo": True}],
)
def test_bad_config_is_rejected(kwargs: dict) -> None:
    with pytest.raises(ValidationError):
        BufferConfig(**kwargs)


def test_empty_buffer_is_rejected() -> None:
    with pytest.raises(ValueError, match="at least one"):
        DifficultyBuffer([], BufferConfig())


def test_task_weights_mix_environments_whatever_their_sizes() -> None:
    tasks = {i: "big" for i in range(90)} | {i: "small" for i in range(90, 100)}
    buffer = DifficultyBuffer(list(range(100)), BufferConfig(), seed=0, tasks=tasks,
                              task_weights={"big": 1.0, "small": 3.0})
    drawn = Counter(tasks[i] for i in buffer.sample_problems(8000))
    assert 0.72 < drawn["small"] / 8000 < 0.78
    assert Counter(tasks[i] for i in buffer.sample_problems(1)) in (Counter(big=1), Counter(small=1))


def test_task_weights_keep_the_difficulty_pools_within_each_environment() -> None:
    tasks = {0: "a", 1: "a", 2: "b", 3: "b"}
    buffer = DifficultyBuffer([0, 1, 2, 3], BufferConfig(easy_threshold=0.9, easy_fraction=1.0), seed=0,
                              tasks=tasks, task_weights={"a": 1.0, "b": 1.0})
    buffer.add(_group(0, [1.0, 1.0]))  # files example 0 as easy (and is dropped as uniform)
    drawn = Counter(buffer.sample_problems(400))
    assert drawn[1] == 0 and drawn[0] > 150  # a's share all comes from a's easy pool
    assert drawn[2] > 50 and drawn[3] > 50  # b has no easy example: its share comes from its normal pool


@pytest.mark.parametrize(
    ("weights", "message"),
    [({"c": 1.0}, "no example has that task"), ({"a": 0.0}, "must be > 0"), ({"a": -1.0}, "must be > 0")],
)
def test_bad_task_weights_are_rejected(weights: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DifficultyBuffer([0, 1], BufferConfig(), tasks={0: "a", 1: "b"}, task_weights=weights)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_draw_at_a_time_follows_the_weights(seed: int) -> None:
    """The orchestrator asks one problem per group: single draws must follow the weights too, not the row counts."""
    weights = {"a": 1.0, "b": 2.0, "c": 5.0}
    tasks = {i: "a" for i in range(500)} | {i: "b" for i in range(500, 520)} | {i: "c" for i in range(520, 530)}
    buffer = DifficultyBuffer(list(tasks), BufferConfig(), seed=seed, tasks=tasks, task_weights=weights)
    draws = 4000
    drawn = Counter(tasks[buffer.sample_problems(1)[0]] for _ in range(draws))
    for task, weight in weights.items():
        expected = weight / sum(weights.values())
        bound = 4 * (expected * (1 - expected) / draws) ** 0.5  # 4 binomial standard deviations
        assert abs(drawn[task] / draws - expected) < bound, (task, drawn)
