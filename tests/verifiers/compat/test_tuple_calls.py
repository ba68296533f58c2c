"""The tuple era's call shapes: ``rollout(client, model, prompt, ...)`` and ``(messages, state)`` replies."""

from __future__ import annotations

from typing import Any

import pytest
from datasets import Dataset

import verifiers as vf
from verifiers.compat.calls import (
    is_tuple_rollout_call,
    overrides_tuple_rollout,
    reply_messages,
    tuple_model_response,
    tuple_rollout,
)
from verifiers.errors import ModelError
from verifiers.http import make_openai_client
from verifiers.rollout.model_call import RetryPolicy
from verifiers.testing import Reply


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


class TupleRollout(vf.SingleTurnEnv):
    """0.1.x style: its own ``rollout(client, model, prompt, ...)``, marking the state on the way out."""

    async def rollout(self, client, model, prompt, answer="", task="default", info=None, sampling_args=None,
                      **kwargs):
        completion, state = await super().rollout(client, model, prompt, answer, task, info, sampling_args)
        state["through_override"] = True
        return completion, state


class StateRollout(vf.SingleTurnEnv):
    async def rollout(self, input, client, model, sampling_args=None):
        return await super().rollout(input, client, model, sampling_args)


def test_a_rollout_override_with_a_client_first_is_the_tuple_eras() -> None:
    assert overrides_tuple_rollout(TupleRollout)
    assert not overrides_tuple_rollout(StateRollout)
    assert not overrides_tuple_rollout(vf.SingleTurnEnv)  # the SDK's own rollout takes both shapes


async def test_the_engine_runs_a_tuple_rollout_override_and_keeps_the_rows_fields(serve, client_for) -> None:
    rows = Dataset.from_list([{"question": "q", "answer": "a", "info": {"k": 1}}])
    env = TupleRollout(eval_dataset=rows, rubric=vf.Rubric(funcs=[lambda completion: 1.0]))
    results = await env.evaluate(client_for(serve("echo")), "m")
    [state] = results.state
    assert state["through_override"] and state["is_completed"] and state["answer"] == "a"
    assert state["completion"][-1]["role"] == "assistant" and results.reward == [1.0]


class _Env:
    message_type = "chat"
    retry = RetryPolicy(max_retries=0)


async def test_an_overlong_prompt_is_0_1s_dummy_response_and_other_refusals_stay_errors(serve) -> None:
    too_long = Reply(status=400, content="This model's maximum context length is 8 tokens")
    client = make_openai_client(serve(lambda request: too_long), api_key="k")
    refused = make_openai_client(serve(lambda request: Reply(status=400, content="bad request")), api_key="k")
    try:
        response = await tuple_model_response(_Env(), client, "m", [{"role": "user", "content": "x"}])
        assert response.id == "overlong-prompt" and response.choices == []
        with pytest.raises(ModelError):
            await tuple_model_response(_Env(), refused, "m", [{"role": "user", "content": "x"}])
    finally:
        await client.close()
        await refused.close()
