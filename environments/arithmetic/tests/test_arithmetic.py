"""Tests for the arithmetic environment: data, reward, arguments, and a full rollout."""

from __future__ import annotations

import openai
import pytest
from arithmetic import SYSTEM_PROMPT, load_environment

from verifiers.errors import UsageError
from verifiers.state import State
from verifiers.testing import ScriptedServer


@pytest.fixture(scope="module")
def env():
    return load_environment(num_train_examples=300, num_eval_examples=50)


# -- data ------------------------------------------------------------------------------


def test_splits_have_requested_sizes_and_default_sizes(env) -> None:
    assert (len(env.get_dataset()), len(env.get_eval_dataset())) == (300, 50)
    default = load_environment()
    assert (len(default.get_dataset()), len(default.get_eval_dataset())) == (5000, 200)


def test_prompt_and_answer(env) -> None:
    row = env.get_eval_dataset()[0]
    assert [(m["role"], m["content"]) for m in row["prompt"]] == [("user", row["question"])]
    a, b = row["question"].split("+")
    assert 10 <= int(a) <= 99 and 10 <= int(b) <= 99
    assert row["answer"] == str(int(a) + int(b))


def test_system_prompt_is_optional() -> None:
    env = load_environment(num_train_examples=1, num_eval_examples=1, system_prompt=SYSTEM_PROMPT)
    assert env.get_dataset()[0]["prompt"][0] == {"role": "system", "content": SYSTEM_PROMPT}


def test_rows_are_deterministic_and_the_seed_matters() -> None:
    a = load_environment(num_train_examples=30, num_eval_examples=10, seed=3)
    b = load_environment(num_train_examples=30, num_eval_examples=10, seed=3)
    c = load_environment(num_train_examples=30, num_eval_examples=10, seed=4)
    assert a.get_dataset()["question"] == b.get_dataset()["question"]
    assert a.get_eval_dataset()["question"] == b.get_eval_dataset()["question"]
    assert a.get_eval_dataset()["question"] != c.get_eval_dataset()["question"]


def test_eval_rows_ignore_train_size_and_never_appear_in_training() -> None:
    small = load_environment(num_train_examples=10, num_eval_examples=40)
    large = load_environment(num_train_examples=7900, num_eval_examples=40)
    evals = large.get_eval_dataset()["question"]
    assert small.get_eval_dataset()["question"] == evals
    assert not set(evals) & set(large.get_dataset()["question"])
    assert len(set(large.get_dataset()["question"])) == 7900


# -- splits: test, validation and training share no unordered pair ----------------------------


def unordered_pairs(dataset) -> set[tuple[int, int]]:
    """Each row's operands in ascending order: ``a+b`` and ``b+a`` give one pair."""
    pairs = [tuple(int(x) for x in q.split("+")) for q in dataset["question"]]
    return {(min(a, b), max(a, b)) for a, b in pairs}


@pytest.fixture(scope="module")
def default_env():
    return load_environment()


@pytest.fixture(scope="module")
def default_splits(default_env) -> dict[str, object]:
    """The default environment's rows: training, test and validation (and training when validation is evaluated)."""
    validation_env = load_environment(eval_split="validation")
    return {"train": default_env.get_dataset(), "test": default_env.get_eval_dataset(),
            "validation": validation_env.get_eval_dataset(), "train_validation": validation_env.get_dataset()}


def test_no_eval_row_has_its_commuted_twin_in_training(default_env) -> None:
    # The split by ordered pair held out 37+45 while training on 45+37: 123 of the 200 test rows.
    train = set(default_env.get_dataset()["question"])
    twins = [q for q in default_env.get_eval_dataset()["question"] if "+".join(reversed(q.split("+"))) in train]
    assert len(twins) == 0, f"{len(twins)} eval rows have their commuted twin in training, e.g. {twins[:3]}"


def test_no_unordered_pair_is_in_two_splits(default_splits) -> None:
    train, test, validation = (unordered_pairs(default_splits[k]) for k in ("train", "test", "validation"))
    assert (len(test), len(validation)) == (200, 200)  # one row per pair: a held-out twin would only repeat it
    assert not train & test
    assert not train & validation
    assert not test & validation


def test_validation_is_as_large_as_test_and_disjoint_from_it(default_splits) -> None:
    test, validation = default_splits["test"]["question"], default_splits["validation"]["question"]
    assert len(validation) == len(test) == 200
    assert not set(validation) & set(test)
    assert default_splits["validation"]["answer"] == [str(sum(map(int, q.split("+")))) for q in validation]


def test_training_is_the_same_whichever_split_is_evaluated(default_splits) -> None:
    assert default_splits["train_validation"]["question"] == default_splits["train"]["question"]
    assert len(default_splits["train"]) == 5000


def test_validation_rows_ignore_train_size() -> None:
    small = load_environment(num_train_examples=10, num_eval_examples=30, eval_split="validation")
    large = load_environment(num_train_examples=7000, num_eval_examples=30, eval_split="validation")
    assert small.get_eval_dataset()["question"] == large.get_eval_dataset()["question"]


def test_training_keeps_both_orders_of_its_pairs() -> None:
    # Commuted twins inside training are no leak, and dropping them would leave too few rows for the default.
    env = load_environment(num_train_examples=7302, num_eval_examples=200)
    questions = set(env.get_dataset()["question"])
    assert len(questions) == 7302  # every problem whose pair is not held out: 8100 less 798
    assert all("+".join(reversed(q.split("+"))) in questions for q in questions)


# -- reward ----------------------------------------------------------------------------


@pytest.mark.parametrize(("reply", "reward"), [("82", 1.0), (" 82\n", 1.0), ("83", 0.0), ("82.", 0.0),
                                                ("The sum is 82", 0.0), ("", 0.0)])
async def test_exact_match_reward(env, reply: str, reward: float) -> None:
    prompt = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "37+45"}]
    state = State.new(prompt=prompt, answer="82")
    score = await env.rubric.score_rollout(prompt, [{"role": "assistant", "content": reply}], "82", state)
    assert score.reward == reward
    assert score.metrics == {"exact_match": reward}


# -- arguments -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_train_examples": -1}, "0 or more"),
        ({"num_eval_examples": 1.5}, "must be an integer"),
        ({"num_train_examples": 0, "num_eval_examples": 0}, "both 0"),
        ({"min_value": 50, "max_value": 40}, "min_value <= max_value"),
        ({"min_value": -1}, "min_value <= max_value"),
        ({"seed": "x"}, "must be an integer"),
        ({"system_prompt": 3}, "system_prompt must be a string"),
        ({"num_train_examples": 7303, "num_eval_examples": 200}, "only 7302 of the range's 8100 problems"),
        ({"min_value": 10, "max_value": 10, "num_eval_examples": 1}, r"needs 2 unordered pairs .* only 1"),
        ({"eval_split": "train"}, "eval_split must be 'test' or 'validation'"),
    ],
)
def test_bad_arguments_raise_a_clear_error(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_environment(**kwargs)


def test_unknown_argument_is_rejected() -> None:
    with pytest.raises(TypeError, match="num_examples"):
        load_environment(num_examples=5)


# -- end to end ------------------------------------------------------------------------


async def test_rollouts_against_a_scripted_server() -> None:
    env = load_environment(num_train_examples=0, num_eval_examples=4)
    answers = {row["question"]: row["answer"] for row in env.get_eval_dataset()}
    wrong = next(iter(answers))

    def policy(request) -> str:
        question = request.messages[-1]["content"]
        return "0" if question == wrong else answers[question]

    with ScriptedServer(policy=policy, port=0).running() as base_url:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="x")
        results = await env.evaluate(client, "scripted", num_examples=4, rollouts_per_example=1)
    rewards = {o["prompt"][-1]["content"]: o["reward"] for o in results["outputs"]}
    assert rewards == {q: (0.0 if q == wrong else 1.0) for q in answers}
