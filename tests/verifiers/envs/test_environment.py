"""Which tools a model call offers: env ``tool_defs``, ``state["tool_defs"]``, ``info["tool_defs"]``,
and 0.3.0's ``get_model_response`` keyword arguments."""

from __future__ import annotations

from typing import Any

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
    ]
    env = OneTurn(dataset=_ds(rows))
    client = client_for(serve(_offered))
    assert (await _reply(env, client, 0))[0] == "tools=row_tool temperature=0.5"
    assert (await _reply(env, client, 1))[0] == "tools= temperature=0.5"  # present but empty: no tools, as 0.3.0


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
