"""ReasoningGymEnv on the real reasoning-gym (pinned in the test extra): splits, mixes, and its own scoring."""

from __future__ import annotations

import sys

import pytest
import reasoning_gym
from reasoning_gym.utils import SYSTEM_PROMPTS

import verifiers as vf
from verifiers.errors import MissingDependencyError


def test_the_name_imports_and_construction_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "reasoning_gym", None)  # as if it were not installed
    with pytest.raises(MissingDependencyError, match="pip install reasoning-gym"):
        vf.ReasoningGymEnv(gym="leg_counting")


def test_splits_rows_and_the_default_system_prompt() -> None:
    env = vf.ReasoningGymEnv(gym="leg_counting", num_train_examples=3, num_eval_examples=2, seed=4)
    expected = reasoning_gym.create_dataset("leg_counting", size=5, seed=4)
    assert list(env.get_dataset()["question"]) == [expected[i]["question"] for i in range(3)]
    assert list(env.get_eval_dataset()["question"]) == [expected[i]["question"] for i in (3, 4)]
    assert list(env.get_eval_dataset()["answer"]) == ["3", "4"]  # the entry's index in the generated dataset
    row = env.get_eval_dataset()[0]
    assert row["info"] == {"source_dataset": "leg_counting"}
    assert row["prompt"][0] == {"role": "system", "content": SYSTEM_PROMPTS["default"]}
    assert env.rubric.get_reward_func_names() == ["check_answer_reward_func", "format_reward_func"]
    assert env.rubric.get_reward_weights() == [1.0, 0.0]
    assert vf.ReasoningGymEnv(gym="leg_counting", num_train_examples=2, num_eval_examples=0).eval_dataset is None


def test_a_mix_becomes_a_composite_dataset_with_each_tasks_config() -> None:
    env = vf.ReasoningGymEnv(
        gym=["leg_counting", {"name": "basic_arithmetic", "weight": 2.0, "config": {"min_terms": 2, "max_terms": 2}}],
        num_train_examples=60, num_eval_examples=0)
    sources = [row["info"]["source_dataset"] for row in env.get_dataset()]
    assert set(sources) == {"leg_counting", "basic_arithmetic"}
    assert sources.count("basic_arithmetic") > sources.count("leg_counting")  # weight 2 against 1
    arithmetic = [env.rg_dataset[i] for i, s in enumerate(sources) if s == "basic_arithmetic"]
    assert all(e["metadata"]["num_terms"] == 2 for e in arithmetic)  # the config reached the task
    with pytest.raises(ValueError, match="dataset names or"):
        vf.ReasoningGymEnv(gym=["leg_counting", 3], num_eval_examples=0)


async def test_rollouts_are_scored_by_reasoning_gym(serve, client_for) -> None:
    env = vf.ReasoningGymEnv(gym="basic_arithmetic", num_train_examples=0, num_eval_examples=3, seed=1)
    golds = {env.rg_dataset[i]["question"]: env.rg_dataset[i]["answer"] for i in range(3)}
    questions = list(golds)
    replies = {questions[0]: f"<answer>{golds[questions[0]]}</answer>",   # right, in the tags
               questions[1]: "<answer>-123456789</answer>",                # wrong, in the tags
               questions[2]: str(golds[questions[2]])}                     # right, but no tags to parse
    client = client_for(serve(lambda request: replies[request.last_user_text]))
    results = await env.evaluate(client, "m")
    # reasoning-gym's own partial credit for a well-formed wrong number (0.1 in 0.1.25), not a 0 of ours.
    same = reasoning_gym.create_dataset("basic_arithmetic", size=3, seed=1)
    wrong = same.score_answer("-123456789", env.rg_dataset[1])
    assert 0.0 < wrong < 1.0
    assert results.metrics["check_answer_reward_func"] == [1.0, wrong, 0.0]
    assert results.metrics["format_reward_func"][0] > results.metrics["format_reward_func"][2]
    assert results.reward == [1.0, wrong, 0.0]
