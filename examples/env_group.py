"""An EnvGroup: two environments evaluated as one, each rollout run and scored by its own member.

The group joins the tour's sums (single-turn, ``examples/tour.py``) and the guessing game (multi-turn,
``examples/multi_turn.py``): its dataset is both datasets, every row's ``task`` naming its member, and the
results come back together with the mean reward of each task. Offline, one scripted model plays both parts,
each with the policy its own example uses, so each task's mean is the one that example prints alone.

    .venv/bin/python examples/env_group.py
    .venv/bin/python examples/env_group.py --base-url http://127.0.0.1:8000/v1 --model my-model
"""

from __future__ import annotations

from typing import Any

import multi_turn
import tour
from model_server import run

import verifiers as vf
from verifiers.testing import ScriptedRequest


def make_env() -> vf.EnvGroup:
    return vf.EnvGroup([tour.make_env(), multi_turn.make_env()], env_names=["sums", "guessing"])


def both_parts(request: ScriptedRequest) -> str:
    """The scripted model: a game when the first user message gives the game's rules, a sum otherwise."""
    first_question = next(m["content"] for m in request.messages if m["role"] == "user")
    if first_question == multi_turn.RULES:
        return multi_turn.binary_search(request)
    return tour.add_without_carrying(request)


def describe(output: dict[str, Any]) -> str:
    part = multi_turn.describe if output["task"] == "guessing" else tour.describe
    return f"[{output['task']}] {part(output)}"


def main() -> None:
    run(make_env, both_parts, describe, __doc__, by_task=True)


if __name__ == "__main__":
    main()
