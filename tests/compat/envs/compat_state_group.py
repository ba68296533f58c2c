"""State-era EnvGroup of two SingleTurnEnvs with different rubrics.

Written the way 0.3-era mixture environments are: each sub-environment keeps
its own dataset and rubric, ``EnvGroup(envs, env_names)`` concatenates the
datasets and routes each rollout back to its environment for scoring. One
metric name (``short_reply``) is shared by both rubrics, the others are not.
Under the "echo" policy the reply is the question itself.
"""

from datasets import Dataset

import verifiers as vf


def short_reply(completion) -> float:
    return 1.0 if len(completion[-1]["content"]) <= 5 else 0.0


def is_upper(completion) -> float:
    text = completion[-1]["content"]
    return 1.0 if text == text.upper() else 0.0


def is_lower(completion, info) -> float:
    text = completion[-1]["content"]
    return 1.0 if text == text.lower() and info.get("strict", True) else 0.0


async def mentions_answer(completion, answer) -> float:
    return 1.0 if answer in completion[-1]["content"] else 0.0


def load_environment(**kwargs) -> vf.Environment:
    shout = vf.SingleTurnEnv(
        dataset=Dataset.from_list(
            [
                {"question": "HELLO", "answer": "HELLO"},
                {"question": "Hello there", "answer": "there"},
            ]
        ),
        system_prompt="Shout.",
        rubric=vf.Rubric(funcs=[is_upper, short_reply], weights=[1.0, 0.5]),
    )
    whisper_rubric = vf.Rubric(funcs=[is_lower], weights=[2.0])
    whisper_rubric.add_reward_func(short_reply, weight=0.25)
    whisper_rubric.add_metric(mentions_answer)
    whisper = vf.SingleTurnEnv(
        dataset=Dataset.from_list(
            [
                {"question": "quiet", "answer": "qu", "info": {"strict": True}},
                {"question": "LOUD noises", "answer": "soft", "info": {"strict": True}},
                {"question": "hush", "answer": "hush", "info": {"strict": False}},
            ]
        ),
        system_prompt="Whisper.",
        rubric=whisper_rubric,
    )
    return vf.EnvGroup(envs=[shout, whisper], env_names=["shout", "whisper"], **kwargs)
