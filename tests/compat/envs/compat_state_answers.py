"""State-era answer helpers, judge details, dataset builders and 0.3.0's marker decorators.

Written the way 0.3-era environments are: datasets given as builders
(``eval_dataset=lambda: ...``), ``extract_boxed_answer(..., strict=True)``,
``extract_hash_answer`` as a ``Parser`` extractor, a ``JudgeRubric`` whose
parser finds no answer in some replies and whose ``judge_sampling_args`` set
``max_tokens``, and an environment subclass with ``@vf.cleanup(stage=...)``
and the marker-only decorators. The "echo" policy makes each question the
model's reply; the test's judge policy echoes the judge prompt and appends
``KEYS=`` with the token-limit arguments the judge request carried. The
imports at the top are names 0.3-era environments import.
"""

import os

from datasets import Dataset
from openai import AsyncOpenAI

import verifiers as vf
from verifiers.types import Tool
from verifiers.utils.data_utils import extract_boxed_answer, extract_hash_answer
from verifiers.utils.logging_utils import print_prompt_completions_sample  # noqa: F401
from verifiers.utils.tool_utils import convert_func_to_tool_def

JUDGE_PROMPT = "EXPECTED={answer}\nGOT={response}"

ROWS = [
    {"question": "work\n#### 42", "answer": "42"},
    {"question": "42", "answer": "42"},
    {"question": "\\boxed{7}", "answer": "7"},
    {"question": "<answer>5</answer> \\boxed{5", "answer": "5"},  # an unclosed box
    {"question": " 9 ", "answer": "9"},
]


def lookup(city: str) -> str:
    """Look a city up."""
    return city


def _field(text: str, name: str) -> str:
    for line in text.splitlines():
        if line.startswith(f"{name}="):
            return line[len(name) + 1 :]
    return ""


class AnswerEnv(vf.SingleTurnEnv):
    @vf.setup
    async def prepare(self, state) -> None:  # a marker only: never called
        state["prepared"] = True

    @vf.metric
    async def marked_metric(self, state) -> float:  # a marker only: never reported
        return 1.0

    @vf.cleanup(stage="group")
    async def tidy(self, state) -> None:
        state["tidied"] = not state.get("prepared", False)


def load_environment(judge_base_url: str | None = None, **kwargs) -> vf.Environment:
    base_url = judge_base_url or os.environ["COMPAT_JUDGE_BASE_URL"]
    hash_parser = vf.Parser(extract_fn=extract_hash_answer)
    rubric = vf.JudgeRubric(
        parser=vf.XMLParser(fields=["answer"]),
        judge_client=AsyncOpenAI(base_url=base_url, api_key="judge-key"),
        judge_model="scripted-judge",
        judge_prompt=JUDGE_PROMPT,
        judge_sampling_args={"max_tokens": 4096},
    )
    tool_def = convert_func_to_tool_def(lookup)

    def hash_answer_matches(completion, answer) -> float:
        return 1.0 if hash_parser.parse_answer(completion) == answer else 0.0

    def strict_boxed(completion, answer) -> float:
        text = completion[-1]["content"]
        return {answer: 1.0, "": 0.5}.get(extract_boxed_answer(text, strict=True), 0.0)

    def loose_boxed(completion, answer) -> float:
        return 1.0 if extract_boxed_answer(completion[-1]["content"]) == answer else 0.0

    async def judge_got_none(judge, prompt, completion, answer, state) -> float:
        verdict = await judge(prompt, completion, answer, state)
        return 1.0 if _field(verdict, "GOT") == "None" else 0.0

    async def judge_token_limit_sent_as(judge, prompt, completion, answer, state) -> float:
        verdict = await judge(prompt, completion, answer, state)
        return {"max_completion_tokens": 1.0, "max_tokens": 2.0}.get(_field(verdict, "KEYS"), 0.0)

    def cleanup_ran(state) -> float:
        return 1.0 if state.get("tidied") else 0.0

    def tool_def_read(state) -> float:
        return 1.0 if isinstance(tool_def, Tool) and tool_def.name == "lookup" else 0.0

    for func, weight in [
        (hash_answer_matches, 1.0),
        (strict_boxed, 0.5),
        (loose_boxed, 0.25),
        (judge_got_none, 0.25),
        (judge_token_limit_sent_as, 0.0),
        (cleanup_ran, 0.0),
        (tool_def_read, 0.0),
    ]:
        rubric.add_reward_func(func, weight=weight)
    return AnswerEnv(eval_dataset=lambda: Dataset.from_list(ROWS), rubric=rubric, **kwargs)
