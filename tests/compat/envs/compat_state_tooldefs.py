"""State-era MultiTurnEnv that chooses the offered tools per environment, row, rollout and call.

Written the way 0.3-era environments do it: ``tool_defs=`` in the constructor
plus ``self.tool_defs.append(...)``; ``info["tool_defs"]`` on a dataset row;
``state["tool_defs"]`` replaced in ``setup_state`` or grown in
``env_response``; and a ``get_model_response`` override passing
``tool_defs=`` and ``sampling_args=`` to ``super()``. The scripted model
answers with the names of the tools it was offered and the temperature.
"""

import json

from datasets import Dataset

import verifiers as vf


def _tool(name: str) -> vf.Tool:
    return vf.Tool(name=name, description=f"The {name} tool.", parameters={"type": "object", "properties": {}})


# info is a JSON string, so rows may differ in keys (a datasets struct would give every row every key).
ROWS = [
    {"mode": "env", "expect": ["TOOLS:base,extra T=None", "TOOLS:base,extra T=None"]},
    {"mode": "state", "expect": ["TOOLS:from_state T=None", "TOOLS:from_state T=None"]},
    {"mode": "row", "tool_defs": [dict(_tool("row_tool"))], "expect": ["TOOLS:row_tool T=None"] * 2},
    {"mode": "explicit", "expect": ["TOOLS:explicit T=0.3", "TOOLS:explicit T=0.3"]},
    {"mode": "grow", "expect": ["TOOLS:base,extra T=None", "TOOLS:base,extra,grown T=None"]},
]


class ToolChoiceEnv(vf.MultiTurnEnv):
    def __init__(self, **kwargs):
        super().__init__(tool_defs=[_tool("base")], **kwargs)
        self.tool_defs.append(_tool("extra"))

    async def setup_state(self, state, **kwargs):
        if state["info"]["mode"] == "state":
            state["tool_defs"] = [_tool("from_state")]
        return await super().setup_state(state, **kwargs)

    async def get_model_response(self, state, prompt, **kwargs):
        if state["info"]["mode"] == "explicit":
            kwargs.update(tool_defs=[_tool("explicit")], sampling_args={"temperature": 0.3})
        return await super().get_model_response(state, prompt, **kwargs)

    async def env_response(self, messages, state, **kwargs):
        if state["info"]["mode"] == "grow":
            state["tool_defs"].append(_tool("grown"))
        return [vf.UserMessage(content="again")]


def replies_as_expected(completion, info) -> float:
    replies = [m["content"] for m in completion if m["role"] == "assistant"]
    return 1.0 if replies == info["expect"] else 0.0


def state_tool_names(state) -> float:
    # State-era rewards read the defs as vf.Tool objects.
    return float(len([t.name for t in state["tool_defs"]]))


def load_environment(**kwargs) -> vf.Environment:
    rows = [{"question": "which tools?", "answer": "", "info": json.dumps(row)} for row in ROWS]
    rubric = vf.Rubric(funcs=[replies_as_expected])
    rubric.add_metric(state_tool_names)
    return ToolChoiceEnv(eval_dataset=Dataset.from_list(rows), rubric=rubric, max_turns=2, **kwargs)
