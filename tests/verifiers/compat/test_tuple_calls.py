"""The tuple era's call shapes: ``rollout(client, model, prompt, ...)`` and ``(messages, state)`` replies."""

from __future__ import annotations

from typing import Any

from verifiers.compat.calls import is_tuple_rollout_call, reply_messages, tuple_rollout


class _Client:
    chat = object()


def test_a_client_first_or_a_prompt_keyword_is_the_tuple_eras_rollout() -> None:
    assert is_tuple_rollout_call((_Client(), "m", []), {})
    assert is_tuple_rollout_call((), {"prompt": [], "client": _Client(), "model": "m"})
    assert not is_tuple_rollout_call(({"prompt": []}, _Client(), "m"), {})
    assert not is_tuple_rollout_call((), {})


async def test_the_tuple_rollout_builds_the_row_and_answers_completion_and_state() -> None:
    calls: list[tuple[Any, ...]] = []

    async def state_rollout(row: dict[str, Any], client: Any, model: str, sampling: dict[str, Any] | None) -> Any:
        calls.append((row, client, model, sampling))
        return {"completion": ["done"], "row": row}

    client = _Client()
    completion, state = await tuple_rollout(state_rollout, client, "m", "prompt", "42", info=None,
                                            sampling_args={"temperature": 0}, example_id=7)
    assert completion == ["done"]
    assert state["row"] == {"prompt": "prompt", "answer": "42", "task": "default", "info": {}, "example_id": 7}
    assert calls[0][1:] == (client, "m", {"temperature": 0})


def test_a_pair_reply_hands_its_messages_on_and_its_new_state_into_the_rollouts() -> None:
    state: dict[str, Any] = {"turn": 1}
    assert reply_messages((["hi"], {"turn": 1, "seen": True}), state) == ["hi"]
    assert state == {"turn": 1, "seen": True}
    same = {"turn": 2}
    assert reply_messages((["x"], same), same) == ["x"] and same == {"turn": 2}


def test_anything_else_is_the_messages_themselves() -> None:
    state: dict[str, Any] = {}
    for reply in (["a", "b"], "text", ("a", "b"), (["a"], "not a state"), None):
        assert reply_messages(reply, state) == reply
    assert state == {}
