"""A multi-turn environment: a number-guessing game the environment referees turn by turn.

``GuessTheNumber`` answers each guess with ``higher`` or ``lower`` (``env_response``) and ends the game when
the guess is right (a ``@vf.stop`` condition) or after ``max_turns`` guesses. Reward: 1 for finding the
number; the number of guesses is a weight-0 metric. Offline, the scripted model plays a binary search, which
needs up to seven guesses for 1-100, so with six allowed it loses the games whose number it reaches last.

    .venv/bin/python examples/multi_turn.py
    .venv/bin/python examples/multi_turn.py --base-url http://127.0.0.1:8000/v1 --model my-model
"""

from __future__ import annotations

import random
import re
from typing import Any

from datasets import Dataset
from model_server import run

import verifiers as vf
from verifiers.testing import ScriptedRequest

LOW, HIGH, MAX_GUESSES = 1, 100, 6
RULES = f"I am thinking of a whole number from {LOW} to {HIGH}. Reply with one number; I will say higher or lower."


def guesses_in(messages: list[dict[str, Any]]) -> list[int | None]:
    """Each assistant message's guess: its first number, or None when it holds none."""
    found = [re.search(r"-?\d+", str(m.get("content") or "")) for m in messages if m.get("role") == "assistant"]
    return [int(match.group()) if match else None for match in found]


class GuessTheNumber(vf.MultiTurnEnv):
    """The secret is the row's ``answer``; the environment only ever says higher, lower or what went wrong."""

    async def env_response(self, messages: vf.Messages, state: vf.State) -> vf.Messages:
        guess, secret = guesses_in(messages)[-1], int(state["answer"])
        if guess is None:
            return [vf.UserMessage(content="Please reply with a number.")]
        return [vf.UserMessage(content="higher" if guess < secret else "lower")]

    @vf.stop
    async def found_it(self, state: vf.State) -> bool:
        # Stop conditions also run before the first turn, when there is no guess yet.
        steps = state["trajectory"]
        return bool(steps) and guesses_in(steps[-1]["completion"])[-1] == int(state["answer"])


def make_env(num_games: int = 8, seed: int = 1) -> GuessTheNumber:
    rng = random.Random(seed)
    rows = [{"question": RULES, "answer": str(secret)} for secret in rng.sample(range(LOW, HIGH + 1), num_games)]

    def found(completion: vf.Messages, answer: str) -> float:
        return float(guesses_in(completion)[-1:] == [int(answer)])

    def guesses(completion: vf.Messages) -> float:
        return float(len(guesses_in(completion)))

    rubric = vf.Rubric(funcs=[found, guesses], weights=[1.0, 0.0])
    dataset = Dataset.from_list(rows)
    return GuessTheNumber(dataset=dataset, eval_dataset=dataset, rubric=rubric, max_turns=MAX_GUESSES)


def binary_search(request: ScriptedRequest) -> str:
    """The scripted model: halves the range the referee's answers leave."""
    low, high = LOW, HIGH
    replies = [m for m in request.messages if m["role"] == "user"][1:]  # the referee's answers, oldest first
    for guess, reply in zip(guesses_in(request.messages), replies):
        if guess is not None:
            low, high = (guess + 1, high) if "higher" in reply["content"] else (low, guess - 1)
    return str((low + high) // 2)


def describe(output: dict[str, Any]) -> str:
    guesses = " ".join(str(g) for g in guesses_in(output["completion"]))
    return f"secret {output['answer']}: guesses {guesses}"


def main() -> None:
    run(make_env, binary_search, describe, __doc__)


if __name__ == "__main__":
    main()
