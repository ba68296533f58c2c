"""EnvGroup: routing by task, metric filling, datasets concatenated with task columns."""

from __future__ import annotations

from datasets import Dataset

import verifiers as vf


def starts_a(completion) -> float:
    return float(completion[-1]["content"].startswith("a"))


def length(completion) -> float:
    return float(len(completion[-1]["content"]))


def _env(words: list[str], func) -> vf.SingleTurnEnv:
    ds = Dataset.from_list([{"question": w, "answer": w, "info": {"src": w}} for w in words])
    return vf.SingleTurnEnv(dataset=ds, rubric=vf.Rubric(funcs=[func]))


async def test_routing_and_metric_filling(serve, client_for) -> None:
    client = client_for(serve("echo"))
    group = vf.EnvGroup([_env(["ab", "ba"], starts_a), _env(["xyz"], length)], env_names=["letters", "sizes"])
    assert group.get_dataset()["task"] == ["letters", "letters", "sizes"]
    assert group.get_dataset()["example_id"] == [0, 1, 2]
    results = await group.evaluate(client, "m")
    assert results.reward == [1.0, 0.0, 3.0]
    # each rollout reports its own environment's metrics (0.3.0); the parallel-list view fills with 0.0
    assert results["outputs"][0]["metrics"] == {"starts_a": 1.0, "num_turns": 1.0}
    assert results["outputs"][2]["metrics"] == {"length": 3.0, "num_turns": 1.0}
    assert results.metrics == {"length": [0.0, 0.0, 3.0], "num_turns": [1.0] * 3, "starts_a": [1.0, 0.0, 0.0]}
    assert results.info[0] == {"src": "ab"}


async def test_group_rubric_fills_the_union_for_direct_callers() -> None:
    group = vf.EnvGroup([_env(["ab"], starts_a), _env(["xyz"], length)], env_names=["letters", "sizes"])
    state = {"prompt": [], "completion": [{"role": "assistant", "content": "abc"}], "answer": "", "task": "letters",
             "info": {}, "timing": {"generation_ms": 0.0, "scoring_ms": 0.0, "total_ms": 0.0}}
    await group.rubric.score_group([state])
    assert state["metrics"] == {"length": 0.0, "starts_a": 1.0}  # the 0.1.x union, zero-filled


def test_bad_groups_are_rejected() -> None:
    import pytest

    with pytest.raises(ValueError):
        vf.EnvGroup([])
    with pytest.raises(ValueError):
        vf.EnvGroup([_env(["a"], length), _env(["b"], length)], env_names=["same", "same"])
