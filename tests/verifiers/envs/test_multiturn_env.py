"""The rollout loop, in both eras, with a real scripted server: turn order, stops, cleanup, errors."""

from __future__ import annotations

from typing import Any

import pytest
from datasets import Dataset

import verifiers as vf


def _ds(n: int = 1) -> Dataset:
    return Dataset.from_list([{"question": f"q{i}", "answer": "a"} for i in range(n)])


class StateEraGame(vf.MultiTurnEnv):
    """Ends itself after the env has answered twice; counts cleanups."""

    cleaned: list[str] = []

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        state["env_turns"] = state.get("env_turns", 0) + 1
        return [vf.UserMessage(content=f"env {state['env_turns']}")]

    @vf.stop(priority=5)
    async def two_env_turns(self, state: vf.State) -> bool:
        return state.get("env_turns", 0) >= 2

    @vf.cleanup
    async def record(self, state: vf.State) -> None:
        self.cleaned.append(state["trajectory_id"])


class TupleEraGame(vf.MultiTurnEnv):
    """Tuple era: the env says it is done inside env_response; the loop must stop before the next model call."""

    async def is_completed(self, messages, state, **kwargs) -> bool:
        if await super().is_completed(messages, state, **kwargs):
            return True
        return state.get("done", False)

    async def env_response(self, messages, state, **kwargs):
        state["done"] = state["turn"] >= 2
        return [{"role": "user", "content": f"turn {state['turn']}"}], state


async def test_state_era_order_stop_and_cleanup(serve, client_for) -> None:
    client = client_for(serve("turns:10"))
    env = StateEraGame(dataset=_ds())
    assert env.era == "state"
    state = await env.rollout(env.get_dataset()[0], client, "m")
    roles = [m["role"] for m in state["completion"]]
    assert roles == ["assistant", "user", "assistant", "user", "assistant"]
    assert state["stop_condition"] == "two_env_turns"
    assert env.cleaned == [state["trajectory_id"]]
    assert [s["completion"][0]["content"] for s in state["trajectory"]] == ["turn 1", "turn 2", "turn 3"]


async def test_tuple_era_stops_right_after_env_response(serve, client_for) -> None:
    client = client_for(serve("turns:10"))
    env = TupleEraGame(dataset=_ds())
    assert env.era == "tuple"
    completion, state = await env.rollout(client, "m", [{"role": "user", "content": "go"}])
    # model, env(turn 1), model, env(turn 2, done) -> stop before a third model call
    assert [m["role"] for m in completion] == ["assistant", "user", "assistant", "user"]
    assert state["turn"] == 2 and completion[-1]["content"] == "turn 2"


def test_a_tuple_era_env_parses_the_last_message_as_0_1_did() -> None:
    # 0.1.x's Parser.parse_answer read the last message whatever its role; a tuple-era completion may end
    # with the environment's own message, and rewards were written against that.
    shared = vf.Parser()
    group = vf.RubricGroup([vf.Rubric(parser=vf.Parser()), vf.Rubric(parser=shared)])
    TupleEraGame(dataset=_ds(), parser=shared, rubric=group)
    completion = [{"role": "assistant", "content": "4"}, {"role": "user", "content": "FEEDBACK"}]
    assert shared.parse_answer(completion) == "FEEDBACK"
    assert all(r.parser.parse_answer(completion) == "FEEDBACK" for r in group.rubrics)
    state_era_parser = vf.Parser()
    StateEraGame(dataset=_ds(), parser=state_era_parser)
    assert state_era_parser.parse_answer(completion) == "4"


async def test_max_turns_and_final_env_response(serve, client_for) -> None:
    class Final(vf.MultiTurnEnv):
        async def env_response(self, messages, state):
            if len(state["trajectory"]) == 2:
                state["final_env_response"] = [vf.UserMessage(content="bye")]
                return state["final_env_response"]
            return [vf.UserMessage(content="more")]

    client = client_for(serve("turns:10"))
    capped = await Final(dataset=_ds(), max_turns=1).rollout(
        _ds()[0] | {"prompt": [{"role": "user", "content": "x"}]}, client, "m")
    assert capped["stop_condition"] == "max_turns_reached" and len(capped["trajectory"]) == 1
    final = await Final(dataset=_ds()).rollout({"prompt": [{"role": "user", "content": "x"}]}, client, "m")
    assert final["stop_condition"] == "has_final_env_response"
    assert final["completion"][-1] == {"role": "user", "content": "bye"} and len(final["trajectory"]) == 2


async def test_model_errors_retry_then_succeed(serve, client_for) -> None:
    client = client_for(serve("echo", fail_first=2, fail_status=503))
    env = vf.SingleTurnEnv(dataset=_ds())
    env.retry = type(env.retry)(max_retries=3, initial_delay_s=0.01)
    state = await env.rollout({"prompt": [{"role": "user", "content": "hi"}]}, client, "m")
    assert state["error"] is None and state["completion"][0]["content"] == "hi"


async def test_persistent_model_errors_are_recorded_and_the_run_goes_on(serve, client_for) -> None:
    client = client_for(serve("echo", fail_first=10_000, fail_status=500))
    env = vf.SingleTurnEnv(dataset=_ds(3), max_retries=1)
    env.retry = type(env.retry)(max_retries=1, initial_delay_s=0.01)
    results = await env.evaluate(client, "m", num_examples=3)
    assert len(results["outputs"]) == 3
    assert all(o["error"].startswith("ModelError") for o in results["outputs"])
    assert all(o["stop_condition"] == "has_error" for o in results["outputs"])


async def test_client_timeouts_become_model_errors(serve, client_for) -> None:
    client = client_for(serve("echo", delay_s=1.0), timeout=0.2)
    env = vf.SingleTurnEnv(dataset=_ds(), max_retries=0)
    state = await env.rollout({"prompt": [{"role": "user", "content": "hi"}]}, client, "m")
    assert isinstance(state["error"], vf.ModelError)


async def test_overlong_prompt_stops_without_error(serve, client_for) -> None:
    def policy(request):
        return vf_testing.Reply(status=400, content="This model's maximum context length is 8 tokens")

    import verifiers.testing as vf_testing

    client = client_for(serve(policy))
    env = vf.SingleTurnEnv(dataset=_ds())
    state = await env.rollout({"prompt": [{"role": "user", "content": "long"}]}, client, "m")
    assert state["prompt_too_long"] and state["error"] is None
    assert state["stop_condition"] == "prompt_too_long"


async def test_rollout_timeout_is_recorded(serve, client_for) -> None:
    client = client_for(serve("echo", delay_s=0.5))
    env = vf.SingleTurnEnv(dataset=_ds(), timeout_seconds=0.1)
    state = await env.rollout({"prompt": [{"role": "user", "content": "hi"}]}, client, "m")
    assert isinstance(state["error"], TimeoutError) and state["stop_condition"] == "has_error"
    assert state["is_completed"]


async def test_rubric_and_env_lifecycle_hooks_run(serve, client_for) -> None:
    calls: list[str] = []

    class Tracking(vf.Rubric):
        @vf.cleanup
        async def after(self, state) -> None:
            calls.append(f"rubric cleanup {state['example_id']}")

        @vf.teardown
        async def done(self) -> None:
            calls.append("rubric teardown")

    class Env(vf.SingleTurnEnv):
        @vf.teardown
        async def close(self) -> None:
            calls.append("env teardown")

    env = Env(dataset=_ds(2), rubric=Tracking(funcs=[lambda: 1.0]))
    await env.evaluate(client_for(serve("echo")), "m", num_examples=2)
    await env.teardown()
    assert sorted(calls) == ["env teardown", "rubric cleanup 0", "rubric cleanup 1", "rubric teardown"]


async def test_trajectory_hooks_drive_a_non_linear_history(serve, client_for) -> None:
    """A State-era override of get_prompt_messages sees each turn; the completion comes from the trajectory."""

    class Summarised(vf.MultiTurnEnv):
        async def env_response(self, messages, state):
            if len(state["trajectory"]) == 3:
                state["final_env_response"] = [vf.UserMessage(content="bye")]
                return state["final_env_response"]
            return [vf.UserMessage(content=f"more {len(state['trajectory'])}")]

        async def get_prompt_messages(self, state):
            messages = await super().get_prompt_messages(state)
            return [vf.UserMessage(content=f"summary of {len(messages)} messages"), *messages[-1:]]

    client = client_for(serve("turns:10"))
    env = Summarised(dataset=_ds())
    state = await env.rollout({"prompt": [{"role": "user", "content": "x"}]}, client, "m")
    prompts = [[m["content"] for m in step["prompt"]] for step in state["trajectory"]]
    assert prompts == [["summary of 1 messages", "x"], ["summary of 4 messages", "more 1"],
                       ["summary of 4 messages", "more 2"]]
    assert state["stop_condition"] == "has_final_env_response"
    # Rendered as verifiers 0.3 does: the last step's prompt + completion + final response, past the prompt's length.
    # The model only ever saw one turn.
    assert [m["content"] for m in state["completion"]] == ["more 2", "turn 1", "bye"]


async def test_an_error_in_a_hook_is_recorded_and_the_completion_still_rendered(serve, client_for) -> None:
    class Broken(vf.MultiTurnEnv):
        async def env_response(self, messages, state):
            raise vf.Error("env broke")

        async def add_trajectory_step(self, state, trajectory_step):
            trajectory_step["extras"]["seen"] = True
            await super().add_trajectory_step(state, trajectory_step)

    client = client_for(serve("turns:10"))
    state = await Broken(dataset=_ds()).rollout({"prompt": [{"role": "user", "content": "x"}]}, client, "m")
    assert state["stop_condition"] == "has_error" and "env broke" in str(state["error"])
    assert state["trajectory"][0]["extras"] == {"seen": True}
    assert [m["role"] for m in state["completion"]] == ["assistant"]


# -- which tools a dataset row is offered (init_state) -------------------------------------------------


def _tool(name: str) -> vf.Tool:
    return vf.Tool(name=name, description="", parameters={"type": "object", "properties": {}})


class Tooled(vf.MultiTurnEnv):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(tool_defs=[_tool("env_tool")], **kwargs)

    async def env_response(self, messages, state, **kwargs):
        return []


async def _row_tool_names(info: dict[str, Any]) -> list[str]:
    env = Tooled(dataset=_ds())
    state = await env.init_state({"prompt": [{"role": "user", "content": "q"}], "info": info}, None, "m")
    assert [t.name for t in state["tool_defs"]] == [t["function"]["name"] for t in state["oai_tools"]]
    return [t.name for t in state["tool_defs"]]


async def test_a_rows_none_tools_mean_the_envs_and_an_empty_list_means_none() -> None:
    assert await _row_tool_names({}) == ["env_tool"]
    assert await _row_tool_names({"tool_defs": None}) == ["env_tool"]  # datasets fill a missing key with None
    assert await _row_tool_names({"oai_tools": None, "tool_defs": None}) == ["env_tool"]
    assert await _row_tool_names({"tool_defs": []}) == []
    assert await _row_tool_names({"oai_tools": []}) == []
    assert await _row_tool_names({"tool_defs": None, "oai_tools": [dict(_tool("legacy"))]}) == ["legacy"]
    assert await _row_tool_names({"tool_defs": [dict(_tool("row"))], "oai_tools": None}) == ["row"]


async def test_a_rows_tools_that_are_not_a_list_are_refused_clearly() -> None:
    for bad in ('[{"name": "x"}]', {"name": "x"}, 3):
        with pytest.raises(TypeError, match=r"info\['tool_defs'\] must be a list"):
            await _row_tool_names({"tool_defs": bad})
