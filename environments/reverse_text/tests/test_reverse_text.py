"""Tests for the reverse-text environment: data, reward, arguments, and a full rollout."""

from __future__ import annotations

import openai
import pytest
from reverse_text import SYSTEM_PROMPT, WORDS, lcs_length, lcs_ratio, load_environment

from verifiers.errors import UsageError
from verifiers.state import State
from verifiers.testing import ScriptedServer


@pytest.fixture(scope="module")
def env():
    return load_environment(num_train_examples=200, num_eval_examples=50)


# -- data ------------------------------------------------------------------------------


def test_splits_have_requested_sizes(env) -> None:
    assert len(env.get_dataset()) == 200
    assert len(env.get_eval_dataset()) == 50


def test_prompt_is_instruction_then_exactly_the_text(env) -> None:
    row = env.get_eval_dataset()[0]
    assert [(m["role"], m["content"]) for m in row["prompt"]] == [
        ("system", SYSTEM_PROMPT),
        ("user", row["question"]),
    ]
    assert row["answer"] == row["question"][::-1]


def test_texts_are_whole_words_within_the_length_range() -> None:
    env = load_environment(num_train_examples=300, num_eval_examples=0, min_len=8, max_len=12)
    texts = env.get_dataset()["question"]
    assert all(8 <= len(t) <= 12 for t in texts)
    assert all(word in WORDS for t in texts for word in t.split(" "))
    assert len(set(texts)) == len(texts)


def test_same_seed_gives_same_rows_and_other_seed_other_rows() -> None:
    a = load_environment(num_train_examples=30, num_eval_examples=10, seed=7)
    b = load_environment(num_train_examples=30, num_eval_examples=10, seed=7)
    c = load_environment(num_train_examples=30, num_eval_examples=10, seed=8)
    assert a.get_dataset()["question"] == b.get_dataset()["question"]
    assert a.get_eval_dataset()["question"] == b.get_eval_dataset()["question"]
    assert a.get_eval_dataset()["question"] != c.get_eval_dataset()["question"]


def test_eval_rows_ignore_train_size_and_never_appear_in_training() -> None:
    small = load_environment(num_train_examples=10, num_eval_examples=40)
    large = load_environment(num_train_examples=500, num_eval_examples=40)
    evals = large.get_eval_dataset()["question"]
    assert small.get_eval_dataset()["question"] == evals
    assert not set(evals) & set(large.get_dataset()["question"])


def test_default_sizes() -> None:
    env = load_environment()
    assert (len(env.get_dataset()), len(env.get_eval_dataset())) == (1000, 100)


# -- reward ----------------------------------------------------------------------------


def test_lcs_length_known_values() -> None:
    assert lcs_length("AGGTAB", "GXTXAYB") == 4
    assert lcs_length("", "abc") == 0
    assert lcs_length("abc", "abc") == 3


async def _score(env, reply: str, answer: str):
    prompt = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": answer[::-1]}]
    completion = [{"role": "assistant", "content": reply}]
    state = State.new(prompt=prompt, answer=answer)
    return await env.rubric.score_rollout(prompt, completion, answer, state)


@pytest.mark.parametrize(
    ("reply", "reward", "exact"),
    [
        ("dlrow olleh", 1.0, 1.0),  # correct
        ("  dlrow olleh\n", 1.0, 1.0),  # correct, with whitespace around it
        ("dlrow olleX", 2 * 10 / 22, 0.0),  # one character wrong
        ("dlrow", 2 * 5 / 16, 0.0),  # half of it
        ("dlrow olleh dlrow olleh", 2 * 11 / 34, 0.0),  # padding costs
        ("", 0.0, 0.0),  # empty
        ("zzz", 0.0, 0.0),  # nothing in common
    ],
)
async def test_reward_on_hand_made_replies(env, reply: str, reward: float, exact: float) -> None:
    score = await _score(env, reply, "dlrow olleh")
    assert score.reward == pytest.approx(reward)
    assert score.metrics == {"lcs_reward": pytest.approx(reward), "exact_match": exact}


async def test_unreversed_text_gets_partial_credit(env) -> None:
    score = await _score(env, "hello world", "dlrow olleh")
    assert 0.0 < score.reward < 1.0
    assert score.reward == pytest.approx(lcs_ratio("hello world", "dlrow olleh"))


# -- arguments -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_train_examples": -1}, "0 or more"),
        ({"num_eval_examples": 2.5}, "must be an integer"),
        ({"num_train_examples": 0, "num_eval_examples": 0}, "both 0"),
        ({"min_len": 0}, "min_len <= max_len"),
        ({"min_len": 10, "max_len": 5}, "min_len <= max_len"),
        ({"seed": "abc"}, "must be an integer"),
        ({"min_len": 1, "max_len": 1, "num_train_examples": 5}, "distinct texts"),
    ],
)
def test_bad_arguments_raise_a_clear_error(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_environment(**kwargs)


def test_unknown_argument_is_rejected() -> None:
    with pytest.raises(TypeError, match="num_examples"):
        load_environment(num_examples=5)


# -- end to end ------------------------------------------------------------------------


async def _evaluate(policy: str, n: int):
    env = load_environment(num_train_examples=0, num_eval_examples=n)
    with ScriptedServer(policy=policy, port=0).running() as base_url:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="x")
        return await env.evaluate(client, "scripted", num_examples=n, rollouts_per_example=1)


async def test_reversing_policy_earns_full_reward() -> None:
    results = await _evaluate("reverse", 5)
    outputs = results["outputs"]
    assert len(outputs) == 5
    assert [o["reward"] for o in outputs] == [1.0] * 5
    assert all(o["metrics"]["exact_match"] == 1.0 for o in outputs)


async def test_echoing_policy_earns_partial_reward() -> None:
    results = await _evaluate("echo", 5)
    rewards = [o["reward"] for o in results["outputs"]]
    assert all(0.0 < r < 1.0 for r in rewards)


def test_three_splits_share_no_text_nor_a_reordering_of_one() -> None:
    from reverse_text import word_key

    test = load_environment(num_train_examples=1500, num_eval_examples=150)
    validation = load_environment(num_train_examples=1500, num_eval_examples=150, eval_split="validation")
    train = test.get_dataset()["question"]
    assert train == validation.get_dataset()["question"]  # tuning and reporting train on the same rows
    keys = {name: {word_key(t) for t in texts} for name, texts in {
        "train": train, "test": test.get_eval_dataset()["question"],
        "validation": validation.get_eval_dataset()["question"]}.items()}
    assert not keys["train"] & keys["test"] and not keys["train"] & keys["validation"]
    assert not keys["test"] & keys["validation"]
    assert len(keys["train"]) == 1500  # no two training texts are reorderings of each other either
    assert word_key("sea all") == word_key("all sea")


def test_an_unknown_eval_split_is_refused() -> None:
    with pytest.raises(UsageError, match="eval_split must be 'test' or 'validation'"):
        load_environment(num_eval_examples=5, eval_split="train")


def test_letter_texts_are_random_lowercase_strings_in_their_own_splits() -> None:
    import string

    from reverse_text import word_key

    words = load_environment(num_train_examples=300, num_eval_examples=30)
    letters = load_environment(num_train_examples=300, num_eval_examples=30, kind="letters", min_len=4, max_len=7)
    texts = list(letters.get_dataset()["question"]) + list(letters.get_eval_dataset()["question"])
    assert all(4 <= len(t) <= 7 and set(t) <= set(string.ascii_lowercase) for t in texts)
    assert len({word_key(t) for t in texts}) == len(texts)  # no text twice, across the splits too
    # the word texts of a seed are what they were before letters existed
    assert list(words.get_eval_dataset()["question"][:3]) == ["web house nut iron", "oak act note", "air web we cake"]
    with pytest.raises(UsageError, match="kind must be 'words' or 'letters'"):
        load_environment(num_eval_examples=5, kind="digits")
