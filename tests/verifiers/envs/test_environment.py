"""Which tools a model call offers: env ``tool_defs``, ``state["tool_defs"]``, ``info["tool_defs"]``,
and 0.3.0's ``get_model_response`` keyword arguments."""

from __future__ import annotations

from typing import Any

import pytest
from datasets import Dataset

import verifiers as vf
from verifiers.testing import Reply


def _offered(request) -> Reply:
    """Answer with the names of the offered tools and the temperature, so a test can read them."""
    names = ",".join(t["function"]["name"] for t in request.tools)
    return Reply(f"tools={names} temperature={request.sampling.get('temperature')}")


def _tool(name: str) -> vf.Tool:
    return vf.Tool(name=name, description=f"The {name} tool.", parameters={"type": "object", "properties": {}})


class OneTurn(vf.MultiTurnEnv):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_turns=1, **kwargs)
        self.tool_defs.append(_tool("from_env"))

    async def env_response(self, messages, state, **kwargs):
        return []


class PerRolloutTools(OneTurn):
    async def setup_state(self, state, **kwargs):
        state["tool_defs"] = [_tool("from_state")]
        return state


class ExplicitCall(OneTurn):
    async def get_model_response(self, state, prompt, **kwargs):
        return await super().get_model_response(
            state, prompt, tool_defs=[_tool("explicit")], sampling_args={"temperature": 0.25}, model="other-model")


def _ds(rows: list[dict[str, Any]] | None = None) -> Dataset:
    return Dataset.from_list(rows or [{"question": "q", "answer": "a"}])


async def _reply(env: vf.Environment, client, row: int = 0) -> tuple[str, vf.State]:
    state = await env.rollout(env.get_dataset()[row], client, "m", {"temperature": 0.5})
    return state["completion"][-1]["content"], state


async def test_a_tool_appended_to_env_tool_defs_is_offered(serve, client_for) -> None:
    content, state = await _reply(OneTurn(dataset=_ds()), client_for(serve(_offered)))
    assert content == "tools=from_env temperature=0.5"
    assert [t.name for t in state["tool_defs"]] == ["from_env"]


async def test_state_tool_defs_set_in_setup_state_replace_the_env_tools(serve, client_for) -> None:
    content, state = await _reply(PerRolloutTools(dataset=_ds()), client_for(serve(_offered)))
    assert content == "tools=from_state temperature=0.5"
    # the OpenAI form of what was offered follows, for code that renders the conversation
    assert [t["function"]["name"] for t in state["oai_tools"]] == ["from_state"]


async def test_info_tool_defs_choose_a_rows_tools(serve, client_for) -> None:
    rows = [
        {"question": "q0", "answer": "a", "info": {"tool_defs": [dict(_tool("row_tool"))]}},
        {"question": "q1", "answer": "a", "info": {"tool_defs": None}},  # a datasets column fills absent keys so
        {"question": "q2", "answer": "a", "info": {"tool_defs": []}},
    ]
    env = OneTurn(dataset=_ds(rows))
    assert env.get_dataset()[1]["info"]["tool_defs"] is None  # what a mixed dataset really holds
    client = client_for(serve(_offered))
    assert (await _reply(env, client, 0))[0] == "tools=row_tool temperature=0.5"
    assert (await _reply(env, client, 1))[0] == "tools=from_env temperature=0.5"  # None: as if absent
    assert (await _reply(env, client, 2))[0] == "tools= temperature=0.5"  # an empty list: no tools


async def test_get_model_response_keywords_override_the_state(serve, client_for) -> None:
    seen: list[str] = []

    def policy(request) -> Reply:
        seen.append(request.model)
        return _offered(request)

    content, state = await _reply(ExplicitCall(dataset=_ds()), client_for(serve(policy)))
    assert content == "tools=explicit temperature=0.25"
    assert seen == ["other-model"]
    assert [t.name for t in state["tool_defs"]] == ["from_env"]  # a one-call choice does not change the state


async def test_the_tuple_era_get_model_response_still_works(serve, client_for) -> None:
    env = OneTurn(dataset=_ds())
    client = client_for(serve(_offered))
    response = await env.get_model_response(client, "m", [{"role": "user", "content": "hi"}],
                                            oai_tools=env.oai_tools, sampling_args={"temperature": 0.1})
    assert response.choices[0].message.content == "tools=from_env temperature=0.1"


# -- state["oai_tools"] set by the environment (0.1.8-0.2.x style) --------------------------------------


class OaiToolsInState(vf.MultiTurnEnv):
    """Sets ``state["oai_tools"]`` in setup_state and grows it in env_response; records the list each turn."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_turns=3, tool_defs=[_tool("from_env")], **kwargs)

    async def setup_state(self, state, **kwargs):
        state["seen"] = []
        if state["info"].get("set"):
            state["oai_tools"] = [{"type": "function", "function": dict(_tool("set_in_state"))}]
        return state

    async def env_response(self, messages, state, **kwargs):
        state["seen"].append(state["oai_tools"])
        if state["info"].get("grow"):
            state["oai_tools"].append(_tool(f"grown{len(state['seen'])}"))  # a def: converted when offered
        return [vf.UserMessage(content="again")]


def _replies(state: vf.State) -> list[str]:
    return [m["content"].split(" ")[0] for m in state["completion"] if m["role"] == "assistant"]


async def test_oai_tools_set_in_setup_state_are_offered(serve, client_for) -> None:
    env = OaiToolsInState(dataset=_ds([{"question": "q", "answer": "a", "info": {"set": True, "grow": True}}]))
    content, state = await _reply(env, client_for(serve(_offered)))
    assert _replies(state) == ["tools=set_in_state", "tools=set_in_state,grown1", "tools=set_in_state,grown1,grown2"]
    assert [t.name for t in state["tool_defs"]] == ["set_in_state", "grown1", "grown2"]  # the State-era view follows


async def test_unchanged_tools_are_not_rebuilt_each_turn(serve, client_for) -> None:
    env = OaiToolsInState(dataset=_ds([{"question": "q", "answer": "a", "info": {"set": False}}]))
    content, state = await _reply(env, client_for(serve(_offered)))
    assert _replies(state) == ["tools=from_env"] * 3
    first = state["seen"][0]
    assert all(seen is first for seen in state["seen"]) and state["oai_tools"] is first


async def test_bad_oai_tools_in_the_state_fail_the_rollout_clearly(serve, client_for) -> None:
    class BadTools(OneTurn):
        async def setup_state(self, state, **kwargs):
            state["oai_tools"] = ["not a tool"]
            return state

    with pytest.raises(TypeError, match="tool definition must be a mapping"):
        await _reply(BadTools(dataset=_ds()), client_for(serve(_offered)))
