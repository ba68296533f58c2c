"""Token outputs through the real loop: server token ids and logprobs per turn, samples for training."""

from __future__ import annotations

from typing import Any

from datasets import Dataset

import verifiers as vf
from verifiers.testing import QWEN3_STYLE, ByteTokenizer
from verifiers.tokens import trajectory_to_samples

TOKEN_ARGS = {"logprobs": True, "extra_body": {"return_tokens_as_token_ids": True, "return_token_ids": True}}


class ThinkingChat(vf.MultiTurnEnv):
    """The model 'thinks' every turn; the env answers as a user, which makes Qwen3-style templates strip
    old thinking."""

    async def env_response(self, messages: Any, state: vf.State, **kwargs: Any) -> list:
        return [vf.UserMessage(content="go on")]


def _think_policy(request):
    from verifiers.testing import Reply

    k = sum(m["role"] == "assistant" for m in request.messages) + 1
    return Reply(content=f"<think>step {k}</think>answer {k}")


async def _rollout(serve, client_for, tokenizer: ByteTokenizer | None) -> vf.State:
    kwargs = {"tokenizer": tokenizer} if tokenizer else {}
    client = client_for(serve(_think_policy, **kwargs))
    env = ThinkingChat(dataset=Dataset.from_list([{"question": "q", "answer": ""}]), max_turns=3,
                       sampling_args=TOKEN_ARGS)
    return await env.rollout(env.get_dataset()[0], client, "m")


async def test_each_turn_keeps_the_servers_tokens(serve, client_for) -> None:
    state = await _rollout(serve, client_for, None)
    tokenizer = ByteTokenizer()
    for step in state["trajectory"]:
        tokens = step["tokens"]
        content = step["completion"][0]["content"]
        assert tokenizer.decode(tokens["completion_ids"]).startswith(content)
        assert len(tokens["completion_logprobs"]) == len(tokens["completion_ids"])
        assert all(lp <= 0 for lp in tokens["completion_logprobs"]) and tokens["prompt_ids"]


async def test_prefix_monotone_template_gives_one_sample(serve, client_for) -> None:
    state = await _rollout(serve, client_for, ByteTokenizer())
    samples = trajectory_to_samples(state["trajectory"], mask_env_responses=True)
    assert len(samples) == 1
    produced = sum(len(s["tokens"]["completion_ids"]) for s in state["trajectory"])
    assert sum(samples[0].completion_mask) == produced


async def test_template_that_rewrites_history_splits_instead_of_failing(serve, client_for) -> None:
    state = await _rollout(serve, client_for, ByteTokenizer(chat_template=QWEN3_STYLE))
    samples = trajectory_to_samples(state["trajectory"], mask_env_responses=True)
    assert len(samples) == 3  # each turn saw a rewritten history: three faithful samples
    for sample, step in zip(samples, state["trajectory"]):
        assert sample.prompt_ids == step["tokens"]["prompt_ids"]
        assert sample.completion_ids == step["tokens"]["completion_ids"]
        assert sample.completion_logprobs == step["tokens"]["completion_logprobs"]
