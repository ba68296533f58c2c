"""Rollout groups from real ``env.generate`` results against the scripted server (public SDK API only)."""

from __future__ import annotations

import pytest

import verifiers as vf
from trainer_adapter.orchestrator.advantages import assign_advantages, compute_advantages
from trainer_adapter.orchestrator.rollouts import groups_from_results

SAMPLING = {"logprobs": True, "max_tokens": 64, "extra_body": {"return_token_ids": True}}


@pytest.fixture(scope="module")
def env():
    return vf.load_environment("reverse-text", num_train_examples=6, num_eval_examples=0)


async def _generate(env, serve, client_for, policy: str, examples: int, group_size: int):
    rows = [dict(env.get_dataset()[i]) for i in range(examples) for _ in range(group_size)]
    client = client_for(serve(policy))
    return await env.generate(rows, client, "scripted", SAMPLING)


async def test_groups_keep_server_tokens_rewards_and_version(env, serve, client_for) -> None:
    results = await _generate(env, serve, client_for, "reverse:0.5", examples=3, group_size=4)
    grouped = groups_from_results(results, policy_version=7)
    assert grouped.failed == 0
    assert [g.example_id for g in grouped.groups] == [0, 1, 2]
    for group in grouped.groups:
        assert group.policy_version == 7 and len(group.rollouts) == 4
        for rollout in group.rollouts:
            (sample,) = rollout.samples
            assert sample.completion_ids and all(sample.completion_mask)
            assert len(sample.completion_logprobs) == len(sample.completion_ids)
    first_state_tokens = results.state[0]["trajectory"][0]["tokens"]
    assert grouped.groups[0].rollouts[0].samples[0].completion_ids == first_state_tokens["completion_ids"]
    assert [r.reward for g in grouped.groups for r in g.rollouts] == results.reward


async def test_errored_rollouts_are_dropped_and_counted(env, serve, client_for) -> None:
    results = await _generate(env, serve, client_for, "reverse", examples=1, group_size=3)
    results["outputs"][1]["error"] = "ModelError"
    grouped = groups_from_results(results, policy_version=0)
    assert grouped.failed == 1
    assert len(grouped.groups[0].rollouts) == 2
    task = results["outputs"][1]["task"]
    assert grouped.reasons == [f"{task}: ModelError"]  # the orchestrator prints each distinct reason once


def test_mismatched_results_are_rejected() -> None:
    class Results(dict):
        state: list = []

    with pytest.raises(ValueError, match="1 outputs but 0 states"):
        groups_from_results(Results(outputs=[{"reward": 1.0}]), policy_version=0)


def test_advantage_is_reward_minus_group_mean() -> None:
    assert compute_advantages([1.0, 0.0, 0.0, 1.0]) == [0.5, -0.5, -0.5, 0.5]
    assert compute_advantages([0.2, 0.5, 0.8]) == pytest.approx([-0.3, 0.0, 0.3])
    assert compute_advantages([3.0]) == [0.0]
    assert compute_advantages([]) == []


async def test_assign_advantages_sets_every_rollout(env, serve, client_for) -> None:
    results = await _generate(env, serve, client_for, "reverse:0.5", examples=1, group_size=4)
    group = assign_advantages(groups_from_results(results, 0).groups[0])
    mean = sum(group.rewards) / 4
    assert [r.advantage for r in group.rollouts] == pytest.approx([r - mean for r in group.rewards])


# -- a template that rewrites earlier turns --------------------------------------------


class _ThinkingChat(vf.MultiTurnEnv):
    """The model thinks every turn and the env answers as a user, so QWEN3_STYLE drops the old thinking."""

    async def env_response(self, messages, state, **kwargs):
        return [vf.UserMessage(content="go on")]


def _thinking_policy(request):
    from verifiers.testing import Reply

    turn = sum(m["role"] == "assistant" for m in request.messages) + 1
    return Reply(content=f"<think>step {turn}</think>answer {turn}")


async def test_a_template_that_rewrites_history_splits_each_rollout_as_documented(serve, client_for) -> None:
    """verifiers.tokens.samples: one sample per turn whose prompt is the re-rendered history (mask 0), each
    model token once with mask 1 and its server logprob; the rollout's advantage on every sample."""
    from datasets import Dataset

    from trainer_adapter.orchestrator.packing import samples_from_groups
    from verifiers.testing import QWEN3_STYLE, ByteTokenizer

    tokenizer = ByteTokenizer(chat_template=QWEN3_STYLE)
    env = _ThinkingChat(dataset=Dataset.from_list([{"question": "q", "answer": ""}]), max_turns=3)
    client = client_for(serve(_thinking_policy, tokenizer=tokenizer))
    results = await env.generate([dict(env.get_dataset()[0])] * 2, client, "scripted", SAMPLING)
    grouped = groups_from_results(results, policy_version=3)
    (group,) = grouped.groups
    assign_advantages(group)
    for rollout, state in zip(group.rollouts, results.state, strict=True):
        assert len(rollout.samples) == 3  # every turn saw a rewritten history
        for sample, step in zip(rollout.samples, state["trajectory"], strict=True):
            history = tokenizer.apply_chat_template(list(step["prompt"]), add_generation_prompt=True)
            assert sample.prompt_ids == history  # the history as re-rendered for that turn
            assert sample.prompt_mask == [0] * len(history)
            assert sample.completion_ids == step["tokens"]["completion_ids"]
            assert sample.completion_mask == [1] * len(sample.completion_ids)
            assert sample.completion_logprobs == step["tokens"]["completion_logprobs"]
        later = tokenizer.decode(rollout.samples[2].prompt_ids)
        assert "answer 1" in later and "<think>step 1</think>" not in later  # old thinking dropped
    packed = samples_from_groups(grouped.groups)
    assert len(packed) == 6 and all(s.policy_version == 3 for s in packed)
    expected = [(len(s.completion_ids), r.advantage) for r in group.rollouts for s in r.samples]
    assert [(sum(p.loss_mask), p.advantage) for p in packed] == expected
