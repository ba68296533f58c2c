"""State-era multi-turn env: the "repeat after me" game written for verifiers 0.3.

Uses what State-era public environments use: ``@vf.stop`` conditions,
``env_response`` returning ``[vf.UserMessage(...)]``, ``state["trajectory"]``,
a ``@vf.cleanup`` handler, a group reward function (plural parameters) and
``rubric.add_metric``. Under the "echo" policy the player repeats the last user
message, so every score is known in advance.
"""

from datasets import Dataset

import verifiers as vf

ROWS = [
    {"question": "red", "answer": "blue", "info": {"say": ["green", "blue", "STOP"]}, "difficulty": 1},
    {"question": "one", "answer": "two", "info": {"say": ["two", "GIVE UP"]}, "difficulty": 2},
    {"question": "a", "answer": "e", "info": {"say": ["b", "c", "d", "e", "f", "g"]}, "difficulty": 3},
    {"question": "STOP", "answer": "", "info": {"say": []}, "difficulty": 1},
]


def _last_reply(state) -> str:
    if not state["trajectory"]:
        return ""
    return state["trajectory"][-1]["completion"][-1]["content"] or ""


class RepeatGameEnv(vf.MultiTurnEnv):
    async def setup_state(self, state):
        state["words_said"] = []
        state["cleaned_up"] = False
        return state

    @vf.stop
    async def player_said_stop(self, state) -> bool:
        return _last_reply(state) == "STOP"

    @vf.stop(priority=5)
    async def player_gave_up(self, state) -> bool:
        return _last_reply(state) == "GIVE UP"

    async def env_response(self, messages, state, **kwargs):
        say = state["info"]["say"]
        turn = len(state["trajectory"])
        word = say[turn - 1] if turn - 1 < len(say) else "STOP"
        state["words_said"].append(word)
        return [vf.UserMessage(content=word)]

    @vf.cleanup
    async def mark_cleaned(self, state):
        state["cleaned_up"] = True


def reached_answer(completion, answer) -> float:
    replies = [m["content"] for m in completion if m["role"] == "assistant"]
    return 1.0 if answer and answer in replies else 0.0


def stopped_by_player(state) -> float:
    return 1.0 if state["stop_condition"] == "player_said_stop" else 0.0


def distinct_endings(completions, states, **kwargs) -> list[float]:
    # Group reward: 1 / (number of rollouts in the group that ended the same way).
    endings = [str(c[-1]["content"]) + str(len(s["trajectory"])) for c, s in zip(completions, states)]
    return [1.0 / endings.count(e) for e in endings]


def env_turns(state) -> float:
    return float(len(state["words_said"]))


async def cleanup_ran_before_scoring(state) -> float:
    return 1.0 if state["cleaned_up"] else 0.0


def load_environment(max_turns: int = 4, **kwargs) -> vf.Environment:
    rubric = vf.Rubric(funcs=[reached_answer, stopped_by_player], weights=[1.0, 0.5])
    rubric.add_reward_func(distinct_endings, weight=0.25)
    rubric.add_metric(env_turns)
    rubric.add_metric(cleanup_ran_before_scoring)
    return RepeatGameEnv(
        dataset=Dataset.from_list(ROWS),
        system_prompt="Repeat the last word you were told.",
        rubric=rubric,
        max_turns=max_turns,
        **kwargs,
    )
