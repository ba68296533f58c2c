"""Tuple-era (0.1.x) rubrics that keep their functions in ``reward_funcs`` / ``reward_weights``.

* A ``Rubric`` subclass assigns both lists after ``super().__init__()``, its own bound methods
  among them, then appends one more function (and its weight) to the lists.
* ``Rubric(reward_funcs=[...])`` passes 0.1.x's list by keyword: weight 1.0 each.

Under the "echo" policy the reply is the question itself.
"""

from datasets import Dataset

import verifiers as vf


def mentions_blue(completion) -> float:
    return 1.0 if "blue" in completion[-1]["content"] else 0.0


class Lists(vf.Rubric):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.reward_funcs = [self.exact, self.short]
        self.reward_weights = [1.0, 0.5]
        self.reward_funcs.append(self.words)
        self.reward_weights.append(0.25)

    def exact(self, completion, answer, **kwargs) -> float:
        return 1.0 if completion[-1]["content"].strip() == answer else 0.0

    def short(self, completion, **kwargs) -> float:
        return 1.0 if len(completion[-1]["content"]) < 12 else 0.0

    async def words(self, completion, **kwargs) -> float:
        return float(len(completion[-1]["content"].split()))


def load_environment(**kwargs) -> vf.Environment:
    dataset = Dataset.from_list([
        {"question": "sky blue", "answer": "sky blue"},
        {"question": "a long red sentence here", "answer": "nope"},
    ])
    rubric = vf.RubricGroup([Lists(), vf.Rubric(reward_funcs=[mentions_blue])])
    return vf.SingleTurnEnv(dataset=dataset, rubric=rubric, **kwargs)
