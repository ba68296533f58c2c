"""Tests for the logic environment, on the real reasoning-gym: tasks, splits, difficulty, scoring, rollouts."""

from __future__ import annotations

from collections import Counter

import openai
import pytest
from logic import TASKS, load_environment

from verifiers.errors import UsageError
from verifiers.testing import ScriptedRequest, ScriptedServer


@pytest.fixture(scope="module")
def env():
    return load_environment(num_train_examples=300, num_eval_examples=100)


def gold(env, row: dict) -> str:
    """reasoning-gym's own answer to the row's puzzle (the row's answer is the puzzle's index)."""
    return str(env.rg_dataset[int(row["answer"])]["answer"])


def test_every_task_type_is_generated(env) -> None:
    assert len(TASKS) >= 8
    sources = Counter(info["source_dataset"] for info in env.get_dataset()["info"])
    assert set(sources) == set(TASKS)
    assert min(sources.values()) >= 10  # equal weights: about 30 each of 300


def test_splits_share_no_prompt(env) -> None:
    train, evaluation = env.get_dataset(), env.get_eval_dataset()
    assert set(train["question"]).isdisjoint(evaluation["question"])
    assert 90 <= len(evaluation) <= 100 and len(train) == 300


def test_the_seed_fixes_the_puzzles() -> None:
    a = load_environment(tasks=["maze", "syllogism"], num_train_examples=20, num_eval_examples=5, seed=3)
    b = load_environment(tasks=["maze", "syllogism"], num_train_examples=20, num_eval_examples=5, seed=3)
    c = load_environment(tasks=["maze", "syllogism"], num_train_examples=20, num_eval_examples=5, seed=4)
    assert a.get_dataset()["question"] == b.get_dataset()["question"] != c.get_dataset()["question"]


def test_task_config_sets_the_difficulty() -> None:
    def board_size(n: int) -> set[int]:
        env = load_environment(tasks=["n_queens"], task_config={"n_queens": {"n": n, "min_remove": 1, "max_remove": 1}},
                               num_train_examples=5, num_eval_examples=1)
        return {len(env.rg_dataset[i]["metadata"]["puzzle"]) for i in range(len(env.rg_dataset))}

    assert board_size(4) == {4} and board_size(8) == {8}


async def test_reasoning_gym_scores_its_own_answers_one_and_wrong_ones_lower(env) -> None:
    rows = env.get_eval_dataset()
    for row in rows.select(range(20)):
        right = [{"role": "assistant", "content": f"Thinking.\n<answer>{gold(env, row)}</answer>"}]
        wrong = [{"role": "assistant", "content": "<answer>no idea</answer>"}]
        assert await env.check_answer_reward_func(completion=right, answer=row["answer"]) == 1.0
        assert await env.check_answer_reward_func(completion=wrong, answer=row["answer"]) < 1.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tasks": ["no_such_puzzle"]}, "unknown reasoning-gym task"),
        ({"tasks": ["composite"]}, "unknown reasoning-gym task"),
        ({"tasks": []}, "non-empty list"),
        ({"task_config": {"maze": {"bogus": 1}}}, "MazeConfig.*bogus"),
        ({"task_config": {"maze": {"min_dist": 50, "max_dist": 3}}}, "max_dist must be >= min_dist"),
        ({"task_config": {"sudoku": {}}}, "not in tasks"),
        ({"task_config": ["maze"]}, "task_config maps"),
        ({"num_train_examples": 0}, "num_train_examples"),
        ({"num_eval_examples": "5"}, "num_eval_examples"),
        ({"seed": 1.5}, "seed"),
    ],
)
def test_bad_arguments_raise_a_clear_error(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_environment(**{"num_train_examples": 5, "num_eval_examples": 2, **kwargs})


async def test_rollouts_against_a_scripted_model(env) -> None:
    rows = env.get_eval_dataset().select(range(6))
    key = {row["question"]: gold(env, row) for row in rows}
    questions = list(key)

    def solver(request: ScriptedRequest) -> str:
        """Right on the first four puzzles, then an answer outside the tags (which the parser cannot read)."""
        question = request.last_user_text
        if questions.index(question) < 4:
            return f"Let me work it out.\n<answer>{key[question]}</answer>"
        return f"The answer is {key[question]}"

    small = load_environment(num_train_examples=300, num_eval_examples=100)  # the same puzzles as ``env``
    with ScriptedServer(solver, port=0).running() as base_url:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
        results = await small.evaluate(client, "scripted", num_examples=6, rollouts_per_example=1)
    rewards = [o["reward"] for o in results["outputs"]]
    assert rewards[:4] == [1.0] * 4
    assert all(r < 1.0 for r in rewards[4:])
