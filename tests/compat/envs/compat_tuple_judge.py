"""Tuple-era SingleTurnEnv scored by an LLM judge (JudgeRubric).

Written the way 0.1.x judge environments are: a ``JudgeRubric`` with its own
``judge_client``/``judge_model``/``judge_prompt`` and a reward function that
awaits ``judge(...)``. The judge endpoint comes from the ``judge_base_url``
argument or the ``COMPAT_JUDGE_BASE_URL`` variable (a local scripted server).
Under the "echo" policy the judge answers with the judge prompt it was sent,
so the verdict is computed from what the rubric filled into the template.
"""

import os

from datasets import Dataset
from openai import AsyncOpenAI

import verifiers as vf

JUDGE_PROMPT = "EXPECTED={answer}\nGOT={response}\nQUESTION={question}"

ROWS = [
    {"question": "<answer>Paris</answer>", "answer": "Paris"},
    {"question": "<answer>Lyon</answer>", "answer": "Paris"},
    {"question": "I think it is Paris", "answer": "Paris"},
    {"question": "<answer> Tokyo </answer>", "answer": "Tokyo"},
]


def _field(judge_text: str, name: str) -> str:
    for line in judge_text.splitlines():
        if line.startswith(f"{name}="):
            return line[len(name) + 1 :]
    return ""


def load_environment(judge_base_url: str | None = None, **kwargs) -> vf.Environment:
    base_url = judge_base_url or os.environ["COMPAT_JUDGE_BASE_URL"]
    parser = vf.XMLParser(fields=["answer"])
    rubric = vf.JudgeRubric(
        parser=parser,
        judge_client=AsyncOpenAI(base_url=base_url, api_key="judge-key"),
        judge_model="scripted-judge",
        judge_prompt=JUDGE_PROMPT,
    )

    async def judge_agrees(judge, prompt, completion, answer, state, **kwargs) -> float:
        verdict = await judge(prompt, completion, answer, state)
        return 1.0 if _field(verdict, "EXPECTED") == _field(verdict, "GOT") else 0.0

    async def judge_saw_question(judge, prompt, completion, answer, state) -> float:
        # Asks again with the same prompt: served from state["judge_response"].
        verdict = await judge(prompt, completion, answer, state)
        return 1.0 if prompt[-1]["content"] in verdict else 0.0

    def judge_calls_cached(state) -> float:
        return float(len(state.get("judge_response", {})))

    rubric.add_reward_func(judge_agrees, weight=1.0)
    rubric.add_reward_func(judge_saw_question, weight=0.5)
    rubric.add_reward_func(judge_calls_cached, weight=0.0)
    return vf.SingleTurnEnv(
        eval_dataset=Dataset.from_list(ROWS),
        system_prompt="Answer inside <answer> tags.",
        parser=parser,
        rubric=rubric,
        **kwargs,
    )
