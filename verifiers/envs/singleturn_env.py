"""``SingleTurnEnv``: one prompt, one model response."""

from __future__ import annotations

from typing import Any

from verifiers.envs.multiturn_env import MultiTurnEnv
from verifiers.state import State


class SingleTurnEnv(MultiTurnEnv):
    """A :class:`MultiTurnEnv` limited to one model turn (chat or completion mode).

    Example::

        env = vf.SingleTurnEnv(dataset=ds, system_prompt="Answer briefly.", rubric=vf.Rubric(funcs=[exact]))
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs["max_turns"] = 1
        super().__init__(**kwargs)

    async def env_response(self, messages: Any, state: State, **kwargs: Any) -> Any:
        # Never reached: the single model turn always completes the rollout.
        return self.conventions.hook_reply([], state)


__all__ = ["SingleTurnEnv"]
