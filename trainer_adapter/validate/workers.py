"""An honest inference worker in-process, on a Hugging Face model: what the tests and bench/toploc.py run.

It samples with a KV cache, keeps the hidden states the decode steps computed, and submits them committed
(:mod:`~trainer_adapter.validate.commitment`) with its logprobs: the same batch a worker behind a vLLM server
submits, made without a server so that 50 honest and 50 tampered workers fit in a test run. The cheats in
:mod:`~trainer_adapter.validate.cheats` are variations of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from transformers import LlamaForCausalLM, PreTrainedModel

from trainer_adapter.model.config import ModelConfig
from trainer_adapter.model.tiny import tiny_config
from trainer_adapter.model.tokenizer import build_tokenizer
from trainer_adapter.validate.batch import SubmittedBatch, SubmittedRollout
from trainer_adapter.validate.commitment import commit

RewardFn = Callable[[list[int]], float]
"""A rollout's reward from its completion tokens (the environment's rubric, as far as the validator knows)."""


@dataclass(frozen=True)
class Sampling:
    """How workers sample and commit."""

    temperature: float = 1.0
    max_tokens: int = 32
    interval: int = 8
    k: int = 8


@dataclass
class Generated:
    """One sampled completion and the predicting hidden states its decode steps computed."""

    completion_ids: list[int]
    hidden: torch.Tensor
    stopped: bool


def peaked_tiny_model(seed: int = 0, sharpness: float = 16.0, num_layers: int = 2) -> PreTrainedModel:
    """The trainer's tiny Llama with its own output head (untied) and a final norm scaled by ``sharpness``.

    Freshly initialised, the tiny model's next-token distributions are nearly uniform (logits spread ~0.2),
    so a sampled token's probability says nothing; scaling the final norm sharpens them as training would.
    Untied, because a random model whose head is its embedding mostly predicts its input token again, and
    any two such models then agree on what to say next, which no two trained models of different sizes do.
    """
    config = tiny_config(ModelConfig(seed=seed, num_layers=num_layers))
    config.tie_word_embeddings = False
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM._from_config(config, attn_implementation="sdpa")
    with torch.no_grad():
        model.model.norm.weight.mul_(sharpness)
    return model.eval()


def arithmetic_prompts(count: int) -> list[list[int]]:
    """``count`` chat prompts ("What is a + b?"), token ids of the trainer's byte tokenizer."""
    tokenizer = build_tokenizer()
    texts = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": f"What is {3 * i + 7} + {i * i % 97}?"}],
            add_generation_prompt=True,
            tokenize=False,
        )
        for i in range(count)
    ]
    return [tokenizer.encode(str(text), add_special_tokens=False) for text in texts]


def ascii_share(completion_ids: list[int]) -> float:
    """The share of completion tokens that are ASCII bytes: a reward in [0, 1] that varies between samples."""
    return sum(t < 128 for t in completion_ids) / len(completion_ids)


@torch.no_grad()
def sample(
    model: PreTrainedModel,
    prompt_ids: list[int],
    sampling: Sampling,
    eos_id: int,
    generator: torch.Generator,
    eos_at: int | None = None,
) -> Generated:
    """Sample one completion; ``eos_at`` forces EOS at that token (the early-EOS cheat), None: honest."""
    out = model.model(input_ids=torch.tensor([prompt_ids]), use_cache=True)
    ids: list[int] = []
    states: list[torch.Tensor] = []
    while True:
        state = out.last_hidden_state[0, -1].float()
        states.append(state)
        probs = (model.lm_head(state) / sampling.temperature).softmax(-1)
        token = eos_id if eos_at == len(ids) else int(torch.multinomial(probs, 1, generator=generator))
        ids.append(token)
        if token == eos_id or len(ids) == sampling.max_tokens:
            return Generated(ids, torch.stack(states), stopped=token == eos_id)
        out = model.model(input_ids=torch.tensor([[token]]), past_key_values=out.past_key_values, use_cache=True)


@torch.no_grad()
def submitted_rollout(
    model: PreTrainedModel, problem: int, prompt_ids: list[int], generated: Generated, sampling: Sampling
) -> SubmittedRollout:
    """The rollout as a worker submits it; its commitment and logprobs (of the sampling distribution, as vLLM
    reports them) come from ``generated.hidden``."""
    logits = model.lm_head(generated.hidden).float() / sampling.temperature
    targets = torch.tensor(generated.completion_ids).unsqueeze(-1)
    logprobs = logits.log_softmax(-1).gather(-1, targets).squeeze(-1).tolist()
    return SubmittedRollout(
        problem=problem, prompt_ids=prompt_ids, completion_ids=generated.completion_ids, logprobs=logprobs,
        finish_reason="stop" if generated.stopped else "length", reward=0.0, advantage=0.0,
        commitment=commit(generated.hidden, sampling.interval, sampling.k),
    )  # fmt: skip


def with_rewards(rollouts: Sequence[SubmittedRollout], reward: RewardFn) -> list[SubmittedRollout]:
    """``rollouts`` with their rewards and group advantages (reward minus the problem group's mean)."""
    rewards = [reward(r.completion_ids) for r in rollouts]
    groups: dict[int, list[float]] = {}
    for r, value in zip(rollouts, rewards, strict=True):
        groups.setdefault(r.problem, []).append(value)
    means = {p: sum(v) / len(v) for p, v in groups.items()}
    return [
        r.model_copy(update={"reward": value, "advantage": value - means[r.problem]})
        for r, value in zip(rollouts, rewards, strict=True)
    ]


@dataclass
class HonestWorker:
    """Rolls out its assigned problems with the model it was given, and submits everything as it came."""

    name: str
    model: PreTrainedModel
    prompts: Sequence[list[int]]
    eos_id: int
    sampling: Sampling
    reward: RewardFn = ascii_share

    def generate(self, problem: int, generator: torch.Generator) -> SubmittedRollout:
        """One honest rollout of ``problem``."""
        prompt = self.prompts[problem]
        generated = sample(self.model, prompt, self.sampling, self.eos_id, generator)
        return submitted_rollout(self.model, problem, prompt, generated, self.sampling)

    def batch(self, step: int, problems: Sequence[int], rollouts_per_problem: int, seed: int) -> SubmittedBatch:
        """The batch for ``step``: ``rollouts_per_problem`` rollouts of each of ``problems``."""
        generator = torch.Generator().manual_seed(seed)
        rollouts = [self.generate(p, generator) for p in problems for _ in range(rollouts_per_problem)]
        return SubmittedBatch(
            worker=self.name, step=step, temperature=self.sampling.temperature, max_tokens=self.sampling.max_tokens,
            rollouts=with_rewards(rollouts, self.reward),
        )  # fmt: skip


__all__ = [
    "Generated", "HonestWorker", "RewardFn", "Sampling", "arithmetic_prompts", "ascii_share", "peaked_tiny_model",
    "sample", "submitted_rollout", "with_rewards",
]  # fmt: skip
