"""Tuple-era answer helpers and judge details: ``extract_hash_answer``, ``extract_boxed_answer``, JudgeRubric.

Written the way 0.1.x environments are: ``Parser(extract_fn=...)`` from
``verifiers.utils.data_utils``, and a ``JudgeRubric`` whose parser finds no
answer in some replies and whose ``judge_sampling_args`` set ``max_tokens``.
The "echo" policy makes each question the model's reply; the test's judge
policy echoes the judge prompt and appends ``KEYS=`` with the token-limit
arguments the judge request carried. The imports at the top are names 0.1.x
environments import; the module fails to load if one is missing.
"""

import os

from datasets import Dataset
from openai import AsyncOpenAI

import verifiers as vf
from verifiers.types import (  # noqa: F401  (imported as public environments do)
    ChatCompletionMessageToolCall,
    ChatCompletionToolParam,
    FunctionDefinition,
)
from verifiers.utils.data_utils import extract_boxed_answer, extract_hash_answer
from verifiers.utils.logging_utils import print_prompt_completions_sample  # noqa: F401

JUDGE_PROMPT = "EXPECTED={answer}\nGOT={response}"

ROWS = [
    {"question": "work\n#### 42", "answer": "42"},
    {"question": "42", "answer": "42"},  # no marker: both helpers give the text back
    {"question": "\\boxed{7}", "answer": "7"},
    {"question": "<answer>5</answer>", "answer": "5"},
    {"question": " 9 ", "answer": "9"},  # given back unstripped
]


def _field(text: str, name: str) -> str:
    for line in text.splitlines():
        if line.startswith(f"{name}="):
            return line[len(name) + 1 :]
    return ""


def load_environment(judge_base_url: str | None = None, **kwargs) -> vf.Environment:
    base_url = judge_base_url or os.environ["COMPAT_JUDGE_BASE_URL"]
    hash_parser = vf.Parser(extract_fn=extract_hash_answer)
    boxed_parser = vf.Parser(extract_fn=extract_boxed_answer)
    rubric = vf.JudgeRubric(
        parser=vf.XMLParser(fields=["answer"]),
        judge_client=AsyncOpenAI(base_url=base_url, api_key="judge-key"),
        judge_model="scripted-judge",
        judge_prompt=JUDGE_PROMPT,
        judge_sampling_args={"max_tokens": 4096, "temperature": None},
    )

    def hash_answer_matches(completion, answer) -> float:
        return 1.0 if hash_parser.parse_answer(completion) == answer else 0.0

    def boxed_answer_matches(completion, answer) -> float:
        return 1.0 if boxed_parser.parse_answer(completion) == answer else 0.0

    async def judge_got_none(judge, prompt, completion, answer, state) -> float:
        verdict = await judge(prompt, completion, answer, state)
        return 1.0 if _field(verdict, "GOT") == "None" else 0.0

    async def judge_agrees(judge, prompt, completion, answer, state) -> float:
        verdict = await judge(prompt, completion, answer, state)
        return 1.0 if _field(verdict, "GOT") == _field(verdict, "EXPECTED") else 0.0

    async def judge_token_limit_sent_as(judge, prompt, completion, answer, state) -> float:
        verdict = await judge(prompt, completion, answer, state)
        return {"max_completion_tokens": 1.0, "max_tokens": 2.0}.get(_field(verdict, "KEYS"), 0.0)

    for func, weight in [
        (hash_answer_matches, 1.0),
        (boxed_answer_matches, 0.5),
        (judge_got_none, 0.25),
        (judge_agrees, 1.0),
        (judge_token_limit_sent_as, 0.0),
    ]:
        rubric.add_reward_func(func, weight=weight)
    return vf.SingleTurnEnv(eval_dataset=Dataset.from_list(ROWS), rubric=rubric, **kwargs)
