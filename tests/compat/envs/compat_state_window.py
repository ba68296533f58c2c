"""State-era env with a non-linear history: the model sees only the system prompt and the newest message.

Overrides the trajectory hooks verifiers 0.3 offers for this (``get_prompt_messages``,
``add_model_response``, ``add_trajectory_step``), each calling ``super()``, and lets the
completion be rendered from the trajectory. Under the "echo" policy the model repeats
the last user message, so every score is known in advance.
"""

from datasets import Dataset

import verifiers as vf

ROWS = [
    {"question": "one", "answer": "three", "info": {"words": ["two", "three", "done"]}},
    {"question": "done", "answer": "done", "info": {"words": []}},
    {"question": "x", "answer": "w", "info": {"words": ["y", "z", "w", "v"]}},
]


def _last_reply(state) -> str:
    if not state["trajectory"]:
        return ""
    return state["trajectory"][-1]["completion"][-1]["content"] or ""


class WindowEnv(vf.MultiTurnEnv):
    async def setup_state(self, state):
        state["prompt_lengths"] = []
        return state

    async def env_response(self, messages, state, **kwargs):
        words = state["info"]["words"]
        turn = len(state["trajectory"])
        return [vf.UserMessage(content=words[turn - 1] if turn - 1 < len(words) else "done")]

    async def get_prompt_messages(self, state):
        messages = await super().get_prompt_messages(state)
        return [messages[0], messages[-1]] if len(messages) > 2 else messages

    async def add_model_response(self, state, prompt_messages, response):
        await super().add_model_response(state, prompt_messages, response)
        state["prompt_lengths"].append(len(prompt_messages))

    async def add_trajectory_step(self, state, trajectory_step):
        trajectory_step["extras"]["turn"] = len(state["trajectory"]) + 1
        await super().add_trajectory_step(state, trajectory_step)

    @vf.stop
    async def said_done(self, state) -> bool:
        return _last_reply(state) == "done"


def answered(completion, answer) -> float:
    return 1.0 if any(m["content"] == answer for m in completion if m["role"] == "assistant") else 0.0


def completion_messages(completion) -> float:
    return float(len(completion))


def longest_prompt(state) -> float:
    return float(max(state["prompt_lengths"], default=0))


def steps_tagged(state) -> float:
    turns = [step["extras"].get("turn") for step in state["trajectory"]]
    return 1.0 if turns == list(range(1, len(turns) + 1)) else 0.0


def load_environment(max_turns: int = 3, **kwargs) -> vf.Environment:
    rubric = vf.Rubric(funcs=[answered], weights=[1.0])
    for metric in (completion_messages, longest_prompt, steps_tagged):
        rubric.add_metric(metric)
    return WindowEnv(
        dataset=Dataset.from_list(ROWS),
        system_prompt="Repeat the last word you were told.",
        rubric=rubric,
        max_turns=max_turns,
        **kwargs,
    )
