"""The tuple era's conventions for the turn loop (see :mod:`verifiers.rollout.conventions`).

0.1.x differs from the State era in four ways the loop can see: it asks ``is_completed`` again right
after every environment turn (rewards can depend on that order); an ``is_completed(messages, state)``
override takes the conversation too; ``max_turns`` counts ``state["turn"]``; and the SDK's own
``env_response`` answers a subclass's ``super()`` call with ``(messages, state)``. Parsers read the answer
from the last message whatever its role, and a failing tool is answered inside ``call_tool``.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from typing import Any

from verifiers.awaitables import maybe_await
from verifiers.parsers.parser import Parser
from verifiers.rollout.conventions import STATE_ERA, Conventions, StopCheck
from verifiers.rollout.era import Era, tuple_style_is_completed
from verifiers.rubrics.overrides import score_states, scoring_override


class TupleEraConventions(Conventions):
    """How 0.1.x drove an environment's hooks."""

    era: Era = "tuple"
    follows_trajectory_hooks = False
    block_major = True
    answers_tool_errors_in_call_tool = True
    passes_content_parts = False

    def __init__(self, messages_in_is_completed: bool) -> None:
        self.messages_in_is_completed = messages_in_is_completed

    async def is_completed(self, is_completed: Callable[..., Any], messages: Any, state: MutableMapping[str, Any]
                           ) -> bool:
        """``is_completed(messages, state)`` where the class overrides it so, else ``is_completed(state)``."""
        if self.messages_in_is_completed:
            return bool(await maybe_await(is_completed, messages, state))
        return await super().is_completed(is_completed, messages, state)

    async def stops_after_env_turn(self, should_stop: StopCheck) -> bool:
        """0.1.x asked again after every environment turn, before the next model turn."""
        return await should_stop()

    def turns_taken(self, state: MutableMapping[str, Any]) -> int:
        return int(state["turn"])

    def hook_reply(self, reply: list[Any], state: MutableMapping[str, Any]) -> Any:
        """``tool_messages, state = await super().env_response(messages, state)``, as 0.1.x answered."""
        return reply, state

    async def score_group(self, rubric: Any, states: list[MutableMapping[str, Any]]) -> None:
        """As 0.1.x's environment scored: through the rubric's ``score_rollout(prompt, completion, ...)`` or
        ``score_group`` override, else from its functions, a rollout's functions all at once."""
        if scoring_override(rubric) in ("tuple_score_rollout", "score_group"):
            await score_states(rubric, states)
        else:
            await rubric._score_states(states, {}, group=True, at_once=True)

    def teach(self, parsers: Sequence[Any], rubrics: Sequence[Any]) -> None:
        """Parsers read the answer from the last message whatever its role, as 0.1.x's did."""
        for parser in parsers:
            if isinstance(parser, Parser):
                parser.answer_from_last_message = True
        super().teach(parsers, rubrics)


def conventions_for(cls: type, era: Era) -> Conventions:
    """The conventions an environment class written in ``era`` is driven by."""
    if era == "tuple":
        return TupleEraConventions(messages_in_is_completed=tuple_style_is_completed(cls))
    return STATE_ERA


__all__ = ["TupleEraConventions", "conventions_for"]
