"""How the rollout core talks to an environment's hooks: the State era's conventions.

The core (:class:`~verifiers.envs.multiturn_env.MultiTurnEnv`, :class:`~verifiers.envs.environment.Environment`,
``ToolEnv``) is written once, for the State era (0.1.8-0.3.0). Where the older tuple era (0.1.x) calls or
answers a hook differently, the core asks its :class:`Conventions` instead of testing the era: this class
answers as the State era does, and :mod:`verifiers.compat` supplies the tuple era's subclass. Which one an
environment gets is decided once, when it is built (:func:`verifiers.compat.turns.conventions_for`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from verifiers.awaitables import maybe_await
from verifiers.rollout.era import Era
from verifiers.rubrics.overrides import score_states

StopCheck = Callable[[], Awaitable[bool]]


class Conventions:
    """The State era's answers; every method is one place where the tuple era differs."""

    era: Era = "state"
    #: A user's trajectory hooks (``get_prompt_messages``, ...) drive the loop (they exist only in this era).
    follows_trajectory_hooks: bool = True
    #: ``evaluate`` repeats each row ``rollouts_per_example`` times in a row (0.1.x repeated whole blocks).
    block_major: bool = False
    #: A tool that raises propagates from ``call_tool``; ``env_response`` answers it (0.1.x answered in call_tool).
    answers_tool_errors_in_call_tool: bool = False
    #: A tool's list of text/image content parts reaches the model as it is (0.1.x sent ``str()`` of it).
    passes_content_parts: bool = True

    async def is_completed(self, is_completed: Callable[..., Any], messages: Any, state: MutableMapping[str, Any]
                           ) -> bool:
        """Ask the environment's ``is_completed`` whether the rollout is over: ``is_completed(state)``."""
        return bool(await maybe_await(is_completed, state))

    async def stops_after_env_turn(self, should_stop: StopCheck) -> bool:
        """Whether the rollout ends right after an environment turn. The State era checks only before a
        model turn's prompt is built, so never here."""
        return False

    def turns_taken(self, state: MutableMapping[str, Any]) -> int:
        """Model turns so far, as ``max_turns`` counts them: the trajectory's steps."""
        return len(state["trajectory"])

    def hook_reply(self, reply: list[Any], state: MutableMapping[str, Any]) -> Any:
        """What the SDK's own ``env_response`` hands back to a subclass's ``super()`` call: the messages."""
        return reply

    async def score_group(self, rubric: Any, states: list[MutableMapping[str, Any]]) -> None:
        """Score one example's rollouts: the rubric's reward functions in order, or its own override."""
        await score_states(rubric, states)

    def teach(self, parsers: Sequence[Any], rubrics: Sequence[Any]) -> None:
        """Tell rubrics that score as their era did (a ``MathRubric``) which era to follow."""
        for rubric in rubrics:
            use_era = getattr(rubric, "use_era", None)
            if callable(use_era):
                use_era(self.era)


STATE_ERA = Conventions()

__all__ = ["Conventions", "STATE_ERA", "StopCheck"]
