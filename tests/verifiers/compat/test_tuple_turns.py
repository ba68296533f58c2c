"""The tuple era's turn conventions: chosen once per class, and driving the State-era loop as 0.1.x did."""

from __future__ import annotations

from typing import Any

import pytest
from datasets import Dataset

import verifiers as vf
from verifiers.compat.turns import TupleEraConventions, conventions_for
from verifiers.envs.multiturn_env import MultiTurnEnv
from verifiers.rollout.conventions import STATE_ERA


def _ds() -> Dataset:
    return Dataset.from_list([{"question": "q", "answer": "a"}])


class CountsToThree(vf.MultiTurnEnv):
    """Tuple era (``env_response`` answers a pair); done once the env has spoken three times."""

    async def is_completed(self, messages, state, **kwargs) -> bool:
        return state.get("said", 0) >= 3

    async def env_response(self, messages, state, **kwargs):
        state["said"] = state.get("said", 0) + 1
        return [{"role": "user", "content": f"env {state['said']}"}], state


class StateEraCount(vf.MultiTurnEnv):
    """The same game in the State era: a ``@vf.stop`` condition, messages only."""

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        state["said"] = state.get("said", 0) + 1
        return [vf.UserMessage(content=f"env {state['said']}")]

    @vf.stop
    async def said_three(self, state: vf.State) -> bool:
        return state.get("said", 0) >= 3


def test_the_era_picks_the_conventions_once_per_environment() -> None:
    tuple_env, state_env = CountsToThree(dataset=_ds()), StateEraCount(dataset=_ds())
    assert isinstance(tuple_env.conventions, TupleEraConventions) and tuple_env.conventions.messages_in_is_completed
    assert state_env.conventions is STATE_ERA
    assert not conventions_for(vf.SingleTurnEnv, "tuple").messages_in_is_completed  # no override of its own


async def test_the_same_game_ends_where_each_era_ended_it(serve, client_for) -> None:
    client = client_for(serve("turns:10"))
    completion, state = await CountsToThree(dataset=_ds()).rollout(client, "m", [{"role": "user", "content": "go"}])
    # 0.1.x checked again after the third env turn, so no fourth model call.
    assert [m["content"] for m in completion if m["role"] == "user"] == ["env 1", "env 2", "env 3"]
    assert completion[-1]["role"] == "user" and state["turn"] == 3
    state_era = await StateEraCount(dataset=_ds()).rollout(_ds()[0] | {"prompt": [{"role": "user", "content": "go"}]},
                                                           client, "m")
    assert [m["role"] for m in state_era["completion"]][-1] == "assistant"  # the State era: one more model turn
    assert len(state_era["trajectory"]) == 4 and state_era["stop_condition"] == "said_three"


async def test_max_turns_counts_the_state_turn_in_the_tuple_era() -> None:
    conventions = TupleEraConventions(messages_in_is_completed=False)
    assert conventions.turns_taken({"turn": 2, "trajectory": []}) == 2
    assert STATE_ERA.turns_taken({"turn": 2, "trajectory": []}) == 0


async def test_is_completed_gets_the_messages_only_where_the_override_takes_them() -> None:
    seen: list[tuple[Any, ...]] = []

    def is_completed(*args: Any) -> bool:
        seen.append(args)
        return True

    state: dict[str, Any] = {}
    assert await TupleEraConventions(messages_in_is_completed=True).is_completed(is_completed, ["m"], state)
    assert await TupleEraConventions(messages_in_is_completed=False).is_completed(is_completed, ["m"], state)
    assert seen == [(["m"], state), (state,)]


async def test_only_the_tuple_era_checks_again_after_an_env_turn() -> None:
    checks: list[str] = []

    async def should_stop() -> bool:
        checks.append("checked")
        return True

    assert not await STATE_ERA.stops_after_env_turn(should_stop) and checks == []
    assert await TupleEraConventions(False).stops_after_env_turn(should_stop) and checks == ["checked"]


def test_the_sdks_own_hooks_answer_in_the_eras_shape() -> None:
    state: dict[str, Any] = {"turn": 1}
    assert TupleEraConventions(False).hook_reply([], state) == ([], state)
    assert STATE_ERA.hook_reply([], state) == []


def test_parsers_of_a_tuple_era_env_read_the_last_message_and_others_are_left_alone() -> None:
    parser, not_a_parser = vf.Parser(), object()
    TupleEraConventions(False).teach([parser, not_a_parser], [])
    assert parser.answer_from_last_message
    fresh = vf.Parser()
    STATE_ERA.teach([fresh], [])
    assert not fresh.answer_from_last_message


def test_the_loop_is_final() -> None:
    assert getattr(MultiTurnEnv.run_loop, "__final__", False) and getattr(MultiTurnEnv._turns, "__final__", False)


@pytest.mark.parametrize("era", ["tuple", "state"])
def test_a_class_without_overrides_gets_its_eras_conventions(era: str) -> None:
    assert conventions_for(vf.SingleTurnEnv, era).era == era  # type: ignore[arg-type]
