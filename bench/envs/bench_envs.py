"""Benchmark environments, written once for this SDK and for the original verifiers 0.3.0.

Only State-era API that both accept is used: ``@vf.stop``, ``env_response``
returning ``[vf.UserMessage(...)]``, ``state["trajectory"]``, ``vf.ToolEnv(tools=...)``,
``vf.Rubric(funcs=...)`` and subscripted messages. The dataset is built in code.

* ``kind="multiturn"``: three model turns; the environment answers each with a user
  message. Meant for the scripted server's ``turns:3`` policy.
* ``kind="tool"``: two small tools; under the ``tools:2`` policy the model calls a
  tool on each of its first two turns and answers on the third.

Both are scored by one cheap reward function, so scoring is counted but costs little.
``IN_FLIGHT`` counts rollouts between ``setup_state`` and their ``@vf.cleanup``, so a
run can show how many were really in flight at once::

    env = load_environment(kind="tool", n=1024)
"""

from __future__ import annotations

from typing import Any

from datasets import Dataset

import verifiers as vf

MODEL_TURNS = 3
KINDS = ("multiturn", "tool")


class InFlight:
    """Rollouts started and not yet cleaned up: now and at most."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0


IN_FLIGHT = InFlight()


class CountsInFlight:
    """Mixin: counts the environment's rollouts in ``IN_FLIGHT``."""

    async def setup_state(self, state: vf.State, **kwargs: Any) -> vf.State:
        IN_FLIGHT.now += 1
        IN_FLIGHT.peak = max(IN_FLIGHT.peak, IN_FLIGHT.now)
        return await super().setup_state(state, **kwargs)

    @vf.cleanup
    async def leave_flight(self, state: vf.State) -> None:
        IN_FLIGHT.now -= 1


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first integer.
        b: The second integer.
    """
    return a + b


def shout(text: str) -> str:
    """Upper-case a text.

    Args:
        text: The text to upper-case.
    """
    return text.upper()


class ThreeTurnEnv(CountsInFlight, vf.MultiTurnEnv):
    """The model speaks three times; the environment says "go on" in between."""

    @vf.stop
    async def three_model_turns(self, state: vf.State) -> bool:
        return len(state["trajectory"]) >= MODEL_TURNS

    async def env_response(self, messages: Any, state: vf.State, **kwargs: Any) -> list[Any]:
        return [vf.UserMessage(content=f"go on ({len(state['trajectory'])})")]


class TwoToolEnv(CountsInFlight, vf.ToolEnv):
    """``vf.ToolEnv`` as is, with the in-flight count."""


def answered(completion: Any) -> float:
    """1.0 when the last message has text (every scripted rollout ends with an answer)."""
    return 1.0 if completion and completion[-1]["content"] else 0.0


def _dataset(n: int) -> Dataset:
    return Dataset.from_list([{"question": f"question {i}", "answer": str(i)} for i in range(n)])


def load_environment(kind: str = "multiturn", n: int = 1024, **kwargs: Any) -> vf.Environment:
    """The ``kind`` benchmark environment over ``n`` distinct prompts (one rollout each)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rubric = vf.Rubric(funcs=[answered])
    if kind == "multiturn":
        return ThreeTurnEnv(eval_dataset=_dataset(n), rubric=rubric, max_turns=MODEL_TURNS + 1, **kwargs)
    return TwoToolEnv(tools=[add, shout], eval_dataset=_dataset(n), rubric=rubric, max_turns=MODEL_TURNS + 1, **kwargs)
