"""State-era scoring details that rewards depend on.

* Functions run one after another: ``tests_ran`` awaits, then records a result in the state that
  ``tests_passed`` reads (how sandbox-backed rubrics pass test results along).
* Two functions with one name both count towards the reward; the metric is the later one's.
* A ``RubricGroup`` member that overrides ``score_group`` is scored through its override, and
  metrics that share a name across members add up.

Under the "echo" policy the reply is the question itself.
"""

import asyncio

from datasets import Dataset

import verifiers as vf


async def tests_ran(completion, state) -> float:
    await asyncio.sleep(0.01)
    state["tests_passed"] = 1.0 if "pass" in completion[-1]["content"] else 0.5
    return 1.0


async def tests_passed(state) -> float:
    return state.get("tests_passed", 0.0)


def length_bonus(completion) -> float:
    return min(len(completion[-1]["content"]) / 20, 1.0)


class Curated(vf.Rubric):
    """Scores a whole group its own way, as hand-written 0.3 rubrics do."""

    async def score_group(self, states, **kwargs):
        for rank, state in enumerate(states):
            state["reward"] = 0.5 + 0.25 * rank
            state["metrics"] = {"curated": 0.5 + 0.25 * rank, "length_bonus": 0.1}


def load_environment(**kwargs) -> vf.Environment:
    dataset = Dataset.from_list([
        {"question": "all tests pass", "answer": ""},
        {"question": "one test fails", "answer": ""},
    ])
    main = vf.Rubric(funcs=[tests_ran, tests_passed, length_bonus, lambda: 1.0, lambda: 0.25])
    return vf.SingleTurnEnv(dataset=dataset, rubric=vf.RubricGroup([main, Curated()]), **kwargs)
