"""The tour: a single-turn environment (a dataset and a rubric) evaluated against a model server.

The task is adding two numbers from 10 to 49. The rubric's reward is 1 for the right sum; a second function,
weight 0, is a metric only (did the reply hold nothing but digits?). Offline, the "model" is the scripted
server answering with :func:`add_without_carrying`, a schoolchild's classic slip, so the mean reward is the
share of sums that need no carry.

    .venv/bin/python examples/tour.py
    .venv/bin/python examples/tour.py --base-url http://127.0.0.1:8000/v1 --model my-model
"""

from __future__ import annotations

import random
import re
from typing import Any

from datasets import Dataset
from model_server import last_reply, run

import verifiers as vf
from verifiers.testing import ScriptedRequest

QUESTION = "What is {a} + {b}?"


def make_env(num_examples: int = 12, seed: int = 0) -> vf.SingleTurnEnv:
    """Rows of ``question`` and ``answer``; the environment formats them into chat prompts."""
    rng = random.Random(seed)
    pairs = [(rng.randint(10, 49), rng.randint(10, 49)) for _ in range(num_examples)]
    dataset = Dataset.from_list([{"question": QUESTION.format(a=a, b=b), "answer": str(a + b)} for a, b in pairs])
    parser = vf.Parser()

    # Reward functions name the arguments they need (completion, answer, parser, state, ...): the rubric injects them.
    def correct_sum(completion: vf.Messages, answer: str) -> float:
        return float((parser.parse_answer(completion) or "").strip() == answer)

    def digits_only(completion: vf.Messages) -> float:
        return float((parser.parse_answer(completion) or "").strip().isdigit())

    rubric = vf.Rubric(funcs=[correct_sum, digits_only], weights=[1.0, 0.0], parser=parser)
    return vf.SingleTurnEnv(dataset=dataset, eval_dataset=dataset, parser=parser, rubric=rubric,
                            system_prompt="Answer with the number only.")


def add_without_carrying(request: ScriptedRequest) -> str:
    """The scripted model: adds each column of digits but drops the carry (38 + 45 -> 73)."""
    a, b = (int(n) for n in re.findall(r"\d+", request.last_user_text))
    ones = (a % 10 + b % 10) % 10
    tens = (a // 10 + b // 10) % 10
    return str(10 * tens + ones)


def describe(output: dict[str, Any]) -> str:
    question = output["prompt"][-1]["content"]
    return f"{question} -> {last_reply(output['completion'])} (answer {output['answer']})"


def main() -> None:
    run(make_env, add_without_carrying, describe, __doc__)


if __name__ == "__main__":
    main()
