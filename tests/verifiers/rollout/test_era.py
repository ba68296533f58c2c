"""Era detection from overrides."""

from __future__ import annotations

import verifiers as vf
from verifiers.rollout.era import detect_era


class Plain(vf.MultiTurnEnv):
    async def env_response(self, messages, state):
        return []


class TupleByIsCompleted(vf.MultiTurnEnv):
    async def is_completed(self, messages, state, **kwargs):
        return True

    async def env_response(self, messages, state, **kwargs):
        return []


class TupleByReturn(vf.MultiTurnEnv):
    async def env_response(self, messages, state, **kwargs):
        reply = [{"role": "user", "content": "x"}]
        return reply, state


class TupleByAnnotation(vf.MultiTurnEnv):
    def env_response(self, messages, state, **kwargs) -> tuple[list, dict]:
        return self.helper(messages, state)

    def helper(self, messages, state):
        return [], state


class StateIsCompleted(vf.MultiTurnEnv):
    async def is_completed(self, state):
        return True

    async def env_response(self, messages, state):
        return []


class SubOfTuple(TupleByReturn):
    pass


def test_detection() -> None:
    assert detect_era(Plain) == "state"
    assert detect_era(TupleByIsCompleted) == "tuple"
    assert detect_era(TupleByReturn) == "tuple"
    assert detect_era(TupleByAnnotation) == "tuple"
    assert detect_era(StateIsCompleted) == "state"
    assert detect_era(SubOfTuple) == "tuple"
    assert detect_era(vf.ToolEnv) == "state"


async def test_base_tool_env_answers_in_the_callers_shape() -> None:
    from datasets import Dataset

    class OldTools(vf.ToolEnv):
        async def env_response(self, messages, state, **kwargs):
            tool_messages, state = await super().env_response(messages, state, **kwargs)
            return tool_messages, state

    env = OldTools(tools=[], dataset=Dataset.from_list([{"question": "q", "answer": ""}]))
    msgs, state = await env.env_response([{"role": "assistant", "content": "x"}], {})
    assert msgs == [] and state == {}
