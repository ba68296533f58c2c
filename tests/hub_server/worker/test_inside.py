"""What the check program finds out about a loaded environment: whether its rollouts need sandboxes of their
own, read from its class (the bundled humaneval and code_problems are CodeEnvs), never guessed from an error."""

from __future__ import annotations

from datasets import Dataset

import verifiers as vf
from hub_server.worker.inside import sandbox_classes


def _code_problems() -> vf.Environment:
    return vf.load_environment("code_problems", num_train_examples=2, num_eval_examples=2)


def test_the_bundled_code_environments_need_sandboxes() -> None:
    assert sandbox_classes(vf.load_environment("humaneval", num_examples=2)) == ["HumanEvalEnv"]
    assert sandbox_classes(_code_problems()) == ["CodeEnv"]


def test_a_plain_environment_does_not_and_a_group_does_when_a_member_does() -> None:
    rows = Dataset.from_list([{"question": "q", "answer": "a"}])
    plain = vf.SingleTurnEnv(eval_dataset=rows, rubric=vf.Rubric())
    assert sandbox_classes(plain) == []
    assert sandbox_classes(vf.EnvGroup([plain, _code_problems()], env_names=["plain", "code"])) == ["CodeEnv"]
