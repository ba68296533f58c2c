"""long-tail: a multi-turn environment where most rollouts are one model turn and a few are many.

Built for ``bench/async_rl.py``: the rollout lengths of real RL (agentic, tool-using, long
reasoning) are long-tailed, and a synchronous trainer waits for the slowest rollout of every
batch. Each example asks for ``info["turns"]`` model turns (the environment answers "more"
in between): 1 for most, ``long_turns`` for a seeded ``long_fraction`` of them. Lengths are
set by the example, not by the model, so an untrained model shows the same tail.

The reward is the share of ASCII letters in the model's replies: cheap, in [0, 1], and
varied within a group under sampling, so groups are not dropped as all-equal::

    env = vf.load_environment("long-tail", long_fraction=0.1, long_turns=16)   # bench/envs on sys.path
"""

from __future__ import annotations

import random
import string
from typing import Any

from datasets import Dataset

import verifiers as vf

LETTERS = frozenset(string.ascii_letters)


class LongTailEnv(vf.MultiTurnEnv):
    """Runs ``info["turns"]`` model turns; the environment says "more" in between."""

    @vf.stop
    async def asked_turns_done(self, state: vf.State) -> bool:
        return len(state["trajectory"]) >= int(state["info"]["turns"])

    async def env_response(self, messages: Any, state: vf.State, **kwargs: Any) -> list[Any]:
        return [vf.UserMessage(content="more")]


def letter_share(completion: Any) -> float:
    """Share of ASCII letters among the characters of the model's replies (0.0 when it said nothing)."""
    text = "".join(str(m.get("content") or "") for m in completion if m.get("role") == "assistant")
    return sum(c in LETTERS for c in text) / len(text) if text else 0.0


def example_turns(n: int, long_fraction: float, long_turns: int, seed: int) -> list[int]:
    """Model turns per example: ``long_turns`` for a seeded ``long_fraction`` of them, 1 for the rest."""
    rng = random.Random(f"long-tail/{seed}")
    return [long_turns if rng.random() < long_fraction else 1 for _ in range(n)]


def _split(turns: list[int], offset: int) -> Dataset:
    return Dataset.from_list(
        [{"question": f"say something ({offset + i})", "answer": "", "info": {"turns": t}, "task": "long-tail"}
         for i, t in enumerate(turns)]
    )


def load_environment(num_examples: int = 512, num_eval_examples: int = 16, long_fraction: float = 0.1,
                     long_turns: int = 16, seed: int = 0) -> vf.Environment:
    """The long-tail environment.

    Args:
        num_examples: training rows.
        num_eval_examples: evaluation rows (all one turn).
        long_fraction: share of training rows that ask for ``long_turns`` model turns.
        long_turns: model turns of a long row.
        seed: picks which rows are long.
    """
    if num_examples < 1 or num_eval_examples < 0:
        raise ValueError("num_examples must be >= 1 and num_eval_examples >= 0")
    if not 0 <= long_fraction <= 1 or long_turns < 1:
        raise ValueError("long_fraction must be in [0, 1] and long_turns >= 1")
    train = _split(example_turns(num_examples, long_fraction, long_turns, seed), 0)
    evaluation = _split([1] * num_eval_examples, num_examples) if num_eval_examples else None
    return LongTailEnv(dataset=train, eval_dataset=evaluation, rubric=vf.Rubric(funcs=[letter_share]),
                       max_turns=long_turns + 1)
