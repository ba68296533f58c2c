"""Tuple-era single-turn env: XML answer format, weighted rubric, format reward.

Written the way 0.1.x public environments are. The scripted server's "echo"
policy replies with the last user message, so each question below *is* the
model's answer and the scores are known in advance.
"""

from datasets import Dataset

import verifiers as vf

ROWS = [
    # clean, correct
    {"question": "<think>\n2+2\n</think>\n<answer>\n4\n</answer>", "answer": "4"},
    # correct value, no think block, odd spacing
    {"question": "<answer>  12 </answer>", "answer": "12"},
    # wrong value, well formed
    {"question": "<think>\nguess\n</think>\n<answer>\n7\n</answer>", "answer": "8"},
    # two answers: the parser takes the last one
    {"question": "<answer>1</answer> then <answer>3</answer>", "answer": "3"},
    # no tags at all
    {"question": "the answer is 5", "answer": "5"},
    # trailing text after the closing tag, think only
    {"question": "<think>\nhmm\n</think>\nno answer here", "answer": "9", "task": "hard"},
]


def load_environment(num_rows: int = -1, **kwargs) -> vf.Environment:
    rows = ROWS if num_rows < 0 else ROWS[:num_rows]
    dataset = Dataset.from_list([{"task": "easy", **row, "info": {"index": i}} for i, row in enumerate(rows)])
    parser = vf.XMLParser(fields=["think", "answer"], answer_field="answer")

    def correct_answer(completion, answer, **kwargs) -> float:
        response = parser.parse_answer(completion) or ""
        return 1.0 if response.strip() == answer.strip() else 0.0

    async def answer_length_penalty(completion, parser) -> float:
        text = parser.parse_answer(completion) or ""
        return min(len(text), 10) / 10.0

    def task_bonus(task, info) -> float:
        return 0.5 if task == "hard" else 0.25 * (info["index"] % 3)

    def brittle(completion, answer) -> float:
        # Raises on some rows; both SDKs must score such a call as 0.0.
        return 1.0 / (len(parser.parse_answer(completion) or "") - 1)

    rubric = vf.Rubric(
        funcs=[
            correct_answer,
            parser.get_format_reward_func(),
            answer_length_penalty,
            task_bonus,
            brittle,
        ],
        weights=[1.0, 0.2, -0.1, 0.3, 0.05],
        parser=parser,
    )
    return vf.SingleTurnEnv(
        eval_dataset=dataset,
        system_prompt=f"Answer in this format:\n{parser.get_format_str()}",
        parser=parser,
        rubric=rubric,
        **kwargs,
    )
