"""Tuple-era (0.1.x) scoring details that rewards depend on.

* ``Parser.parse_answer`` reads the last message whatever its role: this game ends with its own
  verdict message, and the reward is written against it.
* A ``Rubric`` subclass overriding ``score_rollout(prompt, completion, ...)`` is what scores.

Under the "echo" policy the reply is the question (then the env's message) itself.
"""

from datasets import Dataset

import verifiers as vf
from verifiers.types import RolloutScore


class Verdict(vf.MultiTurnEnv):
    async def is_completed(self, messages, state, **kwargs) -> bool:
        return state.get("judged", False)

    async def env_response(self, messages, state, **kwargs):
        state["judged"] = True
        verdict = "ACCEPTED" if "yes" in messages[-1]["content"] else "REJECTED"
        return [{"role": "user", "content": verdict}], state


def accepted(completion, parser) -> float:
    return 1.0 if parser.parse_answer(completion) == "ACCEPTED" else 0.0


class Scaled(vf.Rubric):
    """Halves what its functions give and reports its own metric."""

    async def score_rollout(self, prompt, completion, answer, state, task="default", info=None, **kwargs):
        score = await super().score_rollout(prompt, completion, answer, state, task, info, **kwargs)
        return RolloutScore(reward=score.reward / 2, metrics={**score.metrics, "scaled": score.reward / 2})


def load_environment(**kwargs) -> vf.Environment:
    dataset = Dataset.from_list([{"question": "yes please", "answer": ""}, {"question": "no thanks", "answer": ""}])
    return Verdict(dataset=dataset, max_turns=4, rubric=Scaled(funcs=[accepted]), **kwargs)
