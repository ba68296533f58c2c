"""What the check program finds out about a loaded environment: whether its rollouts need sandboxes of their
own, read from its class (the bundled humaneval and code_problems are CodeEnvs), never guessed from an error."""

from __future__ import annotations

from datasets import Dataset

import verifiers as vf
from hub_server.worker.inside import dataset_mismatch, sandbox_classes
from verifiers.eval.hub_rollouts import stored_messages


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


def test_pushed_rollouts_must_be_rows_of_the_environments_own_dataset() -> None:
    # the attack: a wrong completion with its answer edited to match scores 1.0 under an exact-match rubric
    rows = Dataset.from_list([{"question": w, "answer": w} for w in ("alpha", "beta")])
    env = vf.SingleTurnEnv(eval_dataset=rows, system_prompt="Repeat the word.", rubric=vf.Rubric())
    honest = [{"position": 0, "example_id": 1, "answer": "beta",
               "prompt": stored_messages(env.get_eval_dataset()[1]["prompt"], "prompt")}]
    assert dataset_mismatch(env, [honest]) is None
    edited = [{**honest[0], "answer": "wrong"}]
    assert dataset_mismatch(env, [edited]) == "rollout 0 (example 1): its answer is not the dataset's"
    other_prompt = [{**honest[0], "prompt": [{"role": "user", "content": "beta"}]}]  # the system prompt dropped
    assert dataset_mismatch(env, [other_prompt]) == "rollout 0 (example 1): its prompt is not the dataset's"
    unknown = [{**honest[0], "example_id": 9}]
    assert "no such example" in (dataset_mismatch(env, [unknown]) or "")
