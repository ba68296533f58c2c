"""ReasoningGymEnv: importable without reasoning-gym, and scored end to end by a stand-in reasoning-gym."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field

import pytest

import verifiers as vf
from verifiers.errors import MissingDependencyError


@dataclass
class DatasetSpec:
    name: str
    weight: float = 1.0
    config: dict = field(default_factory=dict)


class FakeProcedural:
    """Entries "what is i+i?"; an answer scores 1.0 when right, 0.5 when it is a number, else 0.0."""

    def __init__(self, name: str, size: int, seed: int, datasets: list | None = None) -> None:
        self.name, self.size, self.seed, self.datasets = name, size, seed, datasets

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> dict:
        source = self.datasets[index % len(self.datasets)].name if self.datasets else self.name
        return {"question": f"what is {index}+{index}?", "answer": str(2 * index),
                "metadata": {"source_dataset": source}}

    def __iter__(self):
        return (self[i] for i in range(self.size))

    def score_answer(self, answer: str, entry: dict) -> float:
        return 1.0 if answer == entry["answer"] else 0.5 if answer.isdigit() else 0.0


@pytest.fixture
def fake_reasoning_gym(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    created: list[tuple] = []
    package = types.ModuleType("reasoning_gym")

    def create_dataset(name: str, size: int, seed: int, datasets: list | None = None) -> FakeProcedural:
        created.append((name, size, seed, datasets))
        return FakeProcedural(name, size, seed, datasets)

    package.create_dataset = create_dataset  # type: ignore[attr-defined]
    composite = types.ModuleType("reasoning_gym.composite")
    composite.DatasetSpec = DatasetSpec  # type: ignore[attr-defined]
    utils = types.ModuleType("reasoning_gym.utils")
    utils.SYSTEM_PROMPTS = {"default": "Think, then answer in <answer> tags."}  # type: ignore[attr-defined]
    for name, module in (("reasoning_gym", package), ("reasoning_gym.composite", composite),
                         ("reasoning_gym.utils", utils)):
        monkeypatch.setitem(sys.modules, name, module)
    return created


def test_the_name_imports_and_construction_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "reasoning_gym", None)
    with pytest.raises(MissingDependencyError, match="pip install reasoning-gym"):
        vf.ReasoningGymEnv(gym="leg_counting")


def test_splits_rows_and_the_default_system_prompt(fake_reasoning_gym) -> None:
    env = vf.ReasoningGymEnv(gym="arith", num_train_examples=3, num_eval_examples=2, seed=4)
    assert fake_reasoning_gym == [("arith", 5, 4, None)]
    assert list(env.get_dataset()["answer"]) == ["0", "1", "2"]
    assert list(env.get_eval_dataset()["answer"]) == ["3", "4"]
    row = env.get_eval_dataset()[0]
    assert row["info"] == {"source_dataset": "arith"}
    assert row["prompt"][0] == {"role": "system", "content": "Think, then answer in <answer> tags."}
    assert env.rubric.get_reward_func_names() == ["check_answer_reward_func", "format_reward_func"]
    assert env.rubric.get_reward_weights() == [1.0, 0.0]
    assert vf.ReasoningGymEnv(gym="arith", num_train_examples=2, num_eval_examples=0).eval_dataset is None


def test_a_mix_becomes_a_composite_dataset(fake_reasoning_gym) -> None:
    env = vf.ReasoningGymEnv(gym=["a", {"name": "b", "weight": 2.0, "config": {"k": 1}}], num_train_examples=4,
                             num_eval_examples=0)
    [(name, size, _, specs)] = fake_reasoning_gym
    assert (name, size) == ("composite", 4)
    assert specs == [DatasetSpec("a", 1.0, {}), DatasetSpec("b", 2.0, {"k": 1})]
    assert [row["info"]["source_dataset"] for row in env.get_dataset()] == ["a", "b", "a", "b"]
    with pytest.raises(ValueError, match="dataset names or"):
        vf.ReasoningGymEnv(gym=["a", 3], num_eval_examples=0)


async def test_rollouts_are_scored_by_reasoning_gym(fake_reasoning_gym, serve, client_for) -> None:
    answers = {"what is 0+0?": "<answer>0</answer>", "what is 1+1?": "<answer>3</answer>", "what is 2+2?": "four"}
    client = client_for(serve(lambda request: answers[request.last_user_text]))
    env = vf.ReasoningGymEnv(gym="arith", num_train_examples=0, num_eval_examples=3)
    results = await env.evaluate(client, "m")
    assert results.metrics["check_answer_reward_func"] == [1.0, 0.5, 0.0]  # "four" parses as None: "None"
    assert results.reward == [1.0, 0.5, 0.0]
