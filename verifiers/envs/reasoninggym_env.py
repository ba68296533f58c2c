"""``ReasoningGymEnv``: procedurally generated reasoning-gym tasks as a single-turn environment.

Needs the third-party ``reasoning-gym`` package (``pip install reasoning-gym``); the
class imports without it, and constructing one without it raises
:class:`~verifiers.errors.MissingDependencyError` with that command.

``gym`` names one reasoning-gym dataset, or lists several (names, or
``{"name", "weight", "config"}`` specs) to mix into a composite one. Each row's
answer is its index in the generated dataset, and the reward is reasoning-gym's
own score of the parsed answer for that entry::

    env = vf.ReasoningGymEnv(gym="leg_counting", num_train_examples=200, num_eval_examples=50)
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

from datasets import Dataset

from verifiers.envs.singleturn_env import SingleTurnEnv
from verifiers.optional import import_optional
from verifiers.parsers.parser import Parser
from verifiers.parsers.xml_parser import XMLParser
from verifiers.rubrics.rubric import Rubric
from verifiers.types import Messages

INSTALL = "pip install reasoning-gym"

GymSpec = str | Sequence[str | dict[str, Any]]
"""One dataset name, or a mix: names (weight 1.0) and ``{"name", "weight", "config"}`` specs."""


class ReasoningGymEnv(SingleTurnEnv):
    """reasoning-gym tasks, scored by reasoning-gym (see the module docstring).

    Args:
        gym: the dataset name, or the mix of datasets.
        num_train_examples / num_eval_examples: rows of each split (generated together, in this order).
        system_prompt: default reasoning-gym's own default system prompt.
        parser: default ``XMLParser(["answer"])``.
        seed: seed of the generated dataset.

    The rubric scores ``check_answer_reward_func`` (weight 1.0) and reports the
    parser's ``format_reward_func`` (weight 0).
    """

    def __init__(
        self,
        gym: GymSpec,
        num_train_examples: int = 1000,
        num_eval_examples: int = 100,
        system_prompt: str | None = None,
        parser: Parser | None = None,
        seed: int = 0,
        **kwargs: Any,
    ) -> None:
        import_optional("reasoning_gym", "ReasoningGymEnv", INSTALL)  # fail before any work without it
        self.gym = gym
        self.num_train_examples = num_train_examples
        self.num_eval_examples = num_eval_examples
        self.seed = seed
        self.rg_dataset = self.build_rg_dataset(gym, num_train_examples + num_eval_examples, seed)
        dataset, eval_dataset = self.rg_to_hf(self.rg_dataset)
        parser = parser if parser is not None else XMLParser(fields=["answer"])
        rubric = Rubric(parser=parser)
        rubric.add_reward_func(self.check_answer_reward_func)
        rubric.add_reward_func(parser.get_format_reward_func(), weight=0.0)
        if system_prompt is None:
            system_prompt = _default_system_prompt()
        super().__init__(dataset=dataset, eval_dataset=eval_dataset, system_prompt=system_prompt,
                         parser=parser, rubric=rubric, message_type="chat", **kwargs)

    async def check_answer_reward_func(self, completion: Messages, answer: str, **kwargs: Any) -> float:
        """reasoning-gym's score of the parsed answer for the row's entry (its index is the row's answer)."""
        parsed = self.parser.parse_answer(completion)
        return float(self.rg_dataset.score_answer(answer=str(parsed).strip(), entry=self.rg_dataset[int(answer)]))

    def build_rg_dataset(self, gym: GymSpec, total_examples: int = 1000, seed: int = 0) -> Any:
        """The reasoning-gym dataset of ``total_examples`` entries: ``gym`` itself, or a composite of the mix."""
        reasoning_gym = import_optional("reasoning_gym", "ReasoningGymEnv", INSTALL)
        options: dict[str, Any] = {}
        name = gym
        if not isinstance(gym, str):  # a mix: reasoning-gym's "composite" dataset over the specs
            composite = import_optional("reasoning_gym.composite", "ReasoningGymEnv", INSTALL)
            name, options["datasets"] = "composite", [_dataset_spec(composite, item) for item in gym]
        return reasoning_gym.create_dataset(name, size=total_examples, seed=seed, **options)

    def rg_to_hf(self, rg_dataset: Any) -> tuple[Dataset | None, Dataset | None]:
        """The training and evaluation rows (an empty split is None): question, the entry's index
        as the answer, its source dataset."""
        rows = [
            {"question": entry["question"], "answer": str(index),
             "info": {"source_dataset": entry["metadata"]["source_dataset"]}}
            for index, entry in enumerate(rg_dataset)
        ]
        train, evaluation = rows[: self.num_train_examples], rows[self.num_train_examples:]
        # An empty split is no split (an empty Dataset has no columns to format).
        return _dataset_or_none(train), _dataset_or_none(evaluation)


def _dataset_spec(composite: ModuleType, item: Any) -> Any:
    """A mix entry as a ``DatasetSpec``: a bare name counts once, with the dataset's default config."""
    fields = {"name": item, "weight": 1.0, "config": {}} if isinstance(item, str) else item
    if not isinstance(fields, dict):
        raise ValueError(f"a gym mix lists dataset names or {{name, weight, config}} dicts, got {item!r}")
    return composite.DatasetSpec(**fields)


def _default_system_prompt() -> str:
    utils = import_optional("reasoning_gym.utils", "ReasoningGymEnv", INSTALL)
    return str(utils.SYSTEM_PROMPTS["default"])


def _dataset_or_none(rows: list[dict[str, Any]]) -> Dataset | None:
    return Dataset.from_list(rows) if rows else None


__all__ = ["ReasoningGymEnv"]
