"""The pure checks and the batch schema, on hand-made batches (no model)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from pydantic import ValidationError

from trainer_adapter.validate import checks
from trainer_adapter.validate.batch import SubmittedBatch, SubmittedRollout

EOS = 257
COMMITMENT = {"interval": 8, "k": 1, "states": [0], "indices": [[0]], "values": [[1.0]]}


def rollout(**change: Any) -> dict[str, Any]:
    row = {
        "problem": 0, "prompt_ids": [1, 2], "completion_ids": [5, 6, EOS], "logprobs": [-0.1, -0.2, -0.3],
        "finish_reason": "stop", "reward": 0.5, "advantage": 0.0, "commitment": COMMITMENT,
    }  # fmt: skip
    return {**row, **change}


def batch(rollouts: list[dict[str, Any]], **change: Any) -> dict[str, Any]:
    return {"worker": "w-1", "step": 1, "temperature": 1.0, "max_tokens": 3, "rollouts": rollouts, **change}


def parsed(rollouts: list[dict[str, Any]], **change: Any) -> SubmittedBatch:
    return SubmittedBatch.model_validate(batch(rollouts, **change))


# --- schema


@pytest.mark.parametrize(
    "bad",
    [
        batch([rollout(logprobs=[-0.1])]),  # one logprob per token
        batch([rollout(logprobs=[0.1, -0.2, -0.3])]),  # a logprob above 0
        batch([rollout(reward=float("nan"))]),
        batch([rollout(advantage=float("inf"))]),
        batch([rollout(completion_ids=[])]),
        batch([rollout(prompt_ids=[-1, 2])]),
        batch([rollout(finish_reason="abort")]),
        batch([rollout(problem=-1)]),
        batch([rollout(secret="x")]),  # unknown field
        batch([rollout(completion_ids=[1, 2, 3, EOS], logprobs=[-0.1] * 4)]),  # longer than max_tokens
        batch([]),
        batch([rollout()], worker="a b"),
        batch([rollout()], worker=""),
        batch([rollout()], temperature=0),
        batch([rollout()], step=-1),
        batch([rollout(commitment={**COMMITMENT, "values": [[1.0, 2.0]]})]),
        {"worker": "w"},
    ],
)
def test_the_schema_refuses_malformed_batches(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        SubmittedBatch.model_validate(bad)


def test_a_well_formed_batch_parses() -> None:
    assert parsed([rollout()]).rollouts[0].finish_reason == "stop"


# --- assignment


def prompt_of(problem: int) -> list[int]:
    return [1, problem + 2]


def test_the_assigned_problems_with_full_groups_pass() -> None:
    b = parsed([rollout(problem=p, prompt_ids=prompt_of(p)) for p in (3, 7) for _ in range(2)])
    assert checks.check_assignment(b, [3, 7], 2, prompt_of) == []


def test_an_unassigned_problem_fails() -> None:
    b = parsed([rollout(problem=p, prompt_ids=prompt_of(p)) for p in (3, 9) for _ in range(2)])
    details = [f.detail for f in checks.check_assignment(b, [3, 7], 2, prompt_of)]
    assert any("[9] were not assigned" in d for d in details) and any("[7] have [0]" in d for d in details)


def test_a_dropped_sample_fails() -> None:
    b = parsed([rollout(problem=3, prompt_ids=prompt_of(3))] * 2 + [rollout(problem=7, prompt_ids=prompt_of(7))])
    [finding] = checks.check_assignment(b, [3, 7], 2, prompt_of)
    assert "[7] have [1] rollouts, not 2" in finding.detail


def test_another_prompt_under_an_assigned_problem_fails() -> None:
    b = parsed([rollout(problem=3, prompt_ids=prompt_of(4))])
    [finding] = checks.check_assignment(b, [3], 1, prompt_of)
    assert finding.rollout == 0 and "not problem 3's" in finding.detail


# --- values


def test_rewards_in_range_with_group_advantages_pass() -> None:
    b = parsed([rollout(reward=0.2, advantage=-0.3), rollout(reward=0.8, advantage=0.3)])
    assert checks.check_values(b, (0.0, 1.0)) == []


def test_a_reward_out_of_range_fails() -> None:
    b = parsed([rollout(reward=1.2, advantage=0.35), rollout(reward=0.5, advantage=-0.35)])
    [finding] = checks.check_values(b, (0.0, 1.0))
    assert finding.rollout == 0 and "outside [0.0, 1.0]" in finding.detail


def test_an_inflated_advantage_fails() -> None:
    b = parsed([rollout(reward=0.2, advantage=5.0), rollout(reward=0.8, advantage=0.3)])
    [finding] = checks.check_values(b, (0.0, 1.0))
    assert finding.rollout == 0 and "group mean" in finding.detail


# --- termination


def test_a_stop_at_a_likely_eos_passes_and_an_unlikely_one_fails() -> None:
    r = SubmittedRollout.model_validate(rollout())
    assert checks.check_termination(r, 0, 3, EOS, eos_prob=0.3, eos_floor=1e-4) == []
    [finding] = checks.check_termination(r, 0, 3, EOS, eos_prob=1e-6, eos_floor=1e-4)
    assert "1.00e-06 < floor" in finding.detail


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"completion_ids": [5, EOS, 6]}, "is not last"),
        ({"completion_ids": [5, 6, 7]}, "without EOS"),
        ({"finish_reason": "length", "completion_ids": [5, 6], "logprobs": [-0.1, -0.1]}, "'length' after 2"),
        ({"finish_reason": "length"}, "last 257"),
    ],
)
def test_claimed_endings_that_do_not_fit_the_tokens_fail(change: dict[str, Any], message: str) -> None:
    r = SubmittedRollout.model_validate(rollout(**change))
    [finding] = checks.check_termination(r, 0, 3, EOS, eos_prob=0.5, eos_floor=1e-4)
    assert message in finding.detail


def test_a_length_ending_at_max_tokens_passes() -> None:
    r = SubmittedRollout.model_validate(rollout(finish_reason="length", completion_ids=[5, 6, 7]))
    assert checks.check_termination(r, 0, 3, EOS, eos_prob=0.0, eos_floor=1e-4) == []


# --- logprobs and sampling


def test_logprobs_within_tolerance_pass_and_others_fail() -> None:
    assert checks.check_logprobs([-0.1, -0.2], [-0.1, -0.2 + 1e-6], 0, 1e-5) == []
    assert checks.check_logprobs([-0.1, -0.2], [-0.1, -0.5], 3, 1e-5)[0].rollout == 3


def draws(distributions: list[list[float]], sampler: list[list[float]], seed: int) -> tuple[list[float], ...]:
    """Tokens drawn from ``sampler``, scored under ``distributions``: (sampled probs, sum q^2, sum q^3)."""
    rng = random.Random(seed)
    sampled = [q[rng.choices(range(len(s)), weights=s)[0]] for q, s in zip(distributions, sampler, strict=True)]
    return sampled, [sum(p * p for p in q) for q in distributions], [sum(p**3 for p in q) for q in distributions]


def peaked(n: int, seed: int) -> list[list[float]]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        weights = [rng.random() ** 8 for _ in range(20)]
        rows.append([w / sum(weights) for w in weights])
    return rows


def test_honest_sampling_sits_near_zero_and_another_models_tokens_far_below() -> None:
    model = peaked(400, seed=0)
    zs = [checks.sampling_z(*draws(model, model, seed=s)) for s in range(20)]
    assert max(abs(z) for z in zs) < 4
    other = peaked(400, seed=1)
    assert checks.sampling_z(*draws(model, other, seed=0)) < -10


def test_greedy_decoding_passed_off_as_sampling_is_far_above() -> None:
    model = peaked(400, seed=0)
    greedy = [[1.0 if p == max(q) else 0.0 for p in q] for q in model]
    assert checks.sampling_z(*draws(model, greedy, seed=0)) > 10


def test_the_sampling_check_is_two_sided() -> None:
    assert checks.check_sampling(4.9, 5.0) == [] and checks.check_sampling(-4.9, 5.0) == []
    assert checks.check_sampling(5.1, 5.0)[0].check == "sampling"
    assert checks.check_sampling(-5.1, 5.0)[0].check == "sampling"
