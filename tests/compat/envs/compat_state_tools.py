"""State-era StatefulToolEnv: a key-value store whose id the model never sees.

Written the way 0.3-era public tool environments are: ``add_tool(tool,
args_to_skip=[...])`` hides an argument from the tool schema,
``update_tool_args`` injects it from the state, ``setup_state`` prepares the
state, and rewards read ``state["tool_defs"]`` and the tool messages. The
scripted "tools" policy calls the offered tools and then answers.
"""

from datasets import Dataset

import verifiers as vf

STORES = {
    "s1": {"color": "teal", "size": "7"},
    "s2": {"color": "plum"},
}

# Each question tells the scripted model which tools to call with which arguments.
ROWS = [
    {"question": '{"read_key": {"key": "color"}, "count_keys": {}}', "answer": "teal|2", "info": {"store": "s1"}},
    {"question": '{"read_key": {"key": "size"}}', "answer": "7", "info": {"store": "s1"}},
    {"question": '{"read_key": {"key": "size"}}', "answer": "", "info": {"store": "s2"}},
    {"question": '{"count_keys": {}}', "answer": "1", "info": {"store": "s2"}},
]


def read_key(key: str, store_id: str) -> str:
    """Read one key from the store.

    Args:
        key: The key to read.
        store_id: Which store (filled in by the environment).
    """
    return STORES[store_id][key]


async def count_keys(store_id: str, calls: list) -> str:
    """Count the keys in the store.

    Args:
        store_id: Which store (filled in by the environment).
        calls: Call log (filled in by the environment).
    """
    calls.append("count_keys")
    return str(len(STORES[store_id]))


class StoreEnv(vf.StatefulToolEnv):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.add_tool(read_key, args_to_skip=["store_id"])
        self.add_tool(count_keys, args_to_skip=["store_id", "calls"])

    async def setup_state(self, state, **kwargs):
        state["store_id"] = state["info"]["store"]
        state["calls"] = []
        return await super().setup_state(state, **kwargs)

    def update_tool_args(self, tool_name, tool_args, messages, state, **kwargs) -> dict:
        tool_args["store_id"] = state["store_id"]
        if tool_name == "count_keys":
            tool_args["calls"] = state["calls"]
        else:
            state["calls"].append(tool_name)
        return tool_args


def correct(completion, answer, parser) -> float:
    return 1.0 if (parser.parse_answer(completion) or "") == answer else 0.0


def hidden_args_hidden(state) -> float:
    shown = [set(t.parameters.get("properties", {})) for t in state["tool_defs"]]
    return 1.0 if all("store_id" not in props and "calls" not in props for props in shown) else 0.0


def tool_calls_logged(state) -> float:
    return float(len(state["calls"]))


def tool_errors(completion) -> float:
    return float(sum(1 for m in completion if m["role"] == "tool" and m["content"] == "'size'"))


def load_environment(max_turns: int = 4, **kwargs) -> vf.Environment:
    parser = vf.XMLParser(fields=["answer"])
    rubric = vf.Rubric(funcs=[correct, hidden_args_hidden], weights=[1.0, 0.5], parser=parser)
    rubric.add_metric(tool_calls_logged)
    rubric.add_reward_func(tool_errors, weight=-0.25)
    return StoreEnv(
        eval_dataset=Dataset.from_list(ROWS),
        system_prompt="Use the tools, then answer inside <answer> tags.",
        parser=parser,
        rubric=rubric,
        max_turns=max_turns,
        **kwargs,
    )
