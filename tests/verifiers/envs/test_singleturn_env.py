"""SingleTurnEnv end to end against a real scripted server on 127.0.0.1."""

from __future__ import annotations

import pytest
from datasets import Dataset

import verifiers as vf


def _dataset() -> Dataset:
    return Dataset.from_list([{"question": "abc", "answer": "cba"}, {"question": "hello", "answer": "olleh"}])


def exact(completion, answer) -> float:
    return float(completion[-1]["content"] == answer)


def test_dataset_is_formatted_with_ids_and_chat_prompts() -> None:
    env = vf.SingleTurnEnv(dataset=_dataset(), system_prompt="Reverse it.")
    row = env.get_dataset()[1]
    assert row["example_id"] == 1 and row["id"] == 1
    assert row["prompt"] == [{"role": "system", "content": "Reverse it."}, {"role": "user", "content": "hello"}]


def test_no_dataset_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="Either dataset or eval_dataset"):
        vf.SingleTurnEnv()
    with pytest.raises(ValueError, match="message_type"):
        vf.SingleTurnEnv(dataset=_dataset(), message_type="voice")


async def test_state_era_rollout_records_trajectory_and_stops(serve, client_for) -> None:
    client = client_for(serve("reverse"))
    env = vf.SingleTurnEnv(dataset=_dataset(), rubric=vf.Rubric(funcs=[exact]))
    row = env.get_dataset()[0]
    state = await env.rollout(row, client, "m", {})
    assert state["completion"] == [{"role": "assistant", "content": "cba"}]
    assert len(state["trajectory"]) == 1 and state["turn"] == 1
    assert state["stop_condition"] == "max_turns_reached"
    assert state["is_completed"] and state["error"] is None


async def test_tuple_era_rollout_returns_completion_and_state(serve, client_for) -> None:
    client = client_for(serve("reverse"))
    env = vf.SingleTurnEnv(dataset=_dataset())
    completion, state = await env.rollout(client, "m", [{"role": "user", "content": "xy"}], answer="yx")
    assert completion == [{"role": "assistant", "content": "yx"}]
    assert state["answer"] == "yx" and len(state["responses"]) == 1


async def test_evaluate_scores_every_rollout(serve, client_for) -> None:
    client = client_for(serve("reverse"))
    env = vf.SingleTurnEnv(dataset=_dataset(), rubric=vf.Rubric(funcs=[exact]))
    results = await env.evaluate(client, "m", num_examples=2, rollouts_per_example=3)
    assert results.reward == [1.0] * 6
    assert results.metrics == {"exact": [1.0] * 6, "num_turns": [1.0] * 6}
    assert [o["example_id"] for o in results["outputs"]] == [0, 0, 0, 1, 1, 1]
    assert [o["rollout_index"] for o in results["outputs"]] == [0, 1, 2, 0, 1, 2]


def test_evaluate_sync_works_inside_and_outside_an_event_loop(serve) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=serve("reverse"), api_key="x")  # the original accepted sync clients too
    env = vf.SingleTurnEnv(dataset=_dataset(), rubric=vf.Rubric(funcs=[exact]))
    assert env.evaluate_sync(client, "m", num_examples=1).reward == [1.0]


async def test_completion_mode(serve, client_for) -> None:
    client = client_for(serve("echo"))
    ds = Dataset.from_list([{"prompt": "say this", "answer": "say this"}])

    def same(completion, answer) -> float:
        return float(completion == answer)

    env = vf.SingleTurnEnv(dataset=ds, message_type="completion", rubric=vf.Rubric(funcs=[same]))
    results = await env.evaluate(client, "m", num_examples=1)
    assert results.completion == ["say this"] and results.reward == [1.0]
