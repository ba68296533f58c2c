"""Tuple-era multi-turn env: a "repeat after me" game.

The environment says a word each turn; the player scores a hit when it replies
with the expected word. Written in the 0.1.x style: ``is_completed(messages,
state)``, ``env_response(...) -> (messages, state)``, ``setup_state``, and the
``turn`` / ``info`` state keys. With the "echo" policy the player repeats the
environment's last message verbatim, so the hits are known in advance.
"""

from datasets import Dataset

import verifiers as vf

ROWS = [
    # every word echoed as expected; stops itself by echoing STOP
    {"question": "red", "info": {"say": ["green", "blue", "STOP"], "expect": ["red", "green", "blue"]}},
    # expectations differ on the second word
    {"question": "one", "info": {"say": ["two", "STOP"], "expect": ["one", "TWO"]}},
    # never says STOP: ends by max_turns
    {"question": "a", "info": {"say": ["b", "c", "d", "e", "f", "g"], "expect": ["a", "b", "x", "d", "e", "f"]}},
    # stops right after the first turn
    {"question": "STOP", "info": {"say": [], "expect": ["STOP"]}},
]


class RepeatGameEnv(vf.MultiTurnEnv):
    async def setup_state(self, state, **kwargs):
        state["hits"] = 0
        state["said"] = []
        return state

    async def is_completed(self, messages, state, **kwargs) -> bool:
        if await self.max_turns_reached(state):
            return True
        if not messages or messages[-1]["role"] != "assistant":
            return False
        return messages[-1]["content"].strip() == "STOP"

    async def env_response(self, messages, state, **kwargs):
        reply = messages[-1]["content"].strip()
        turn = state["turn"]  # model turns taken so far (>= 1 here)
        expected = state["info"]["expect"]
        if turn - 1 < len(expected) and reply == expected[turn - 1]:
            state["hits"] += 1
        say = state["info"]["say"]
        word = say[turn - 1] if turn - 1 < len(say) else "STOP"
        state["said"].append(word)
        return [{"role": "user", "content": word}], state


def hit_rate(state, **kwargs) -> float:
    return state["hits"] / max(state["turn"], 1)


def turns_taken(state) -> float:
    return float(state["turn"])


def ended_cleanly(completion) -> float:
    last = completion[-1]
    return 1.0 if last["role"] == "assistant" and last["content"] == "STOP" else 0.0


async def env_words(state, completion) -> float:
    user_turns = [m for m in completion if m["role"] == "user"]
    return float(len(user_turns) == len(state["said"]))


def load_environment(max_turns: int = 4, **kwargs) -> vf.Environment:
    dataset = Dataset.from_list(ROWS)
    rubric = vf.Rubric(funcs=[hit_rate, turns_taken, ended_cleanly], weights=[1.0, 0.0, 0.5])
    rubric.add_reward_func(env_words, weight=0.25)
    return RepeatGameEnv(
        dataset=dataset,
        system_prompt="Repeat the last word you were told.",
        rubric=rubric,
        max_turns=max_turns,
        **kwargs,
    )
