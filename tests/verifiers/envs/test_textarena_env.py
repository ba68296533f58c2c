"""TextArenaEnv: importable without textarena, and played end to end against a stand-in textarena."""

from __future__ import annotations

import random
import sys
import types

import pytest

import verifiers as vf
from verifiers.errors import MissingDependencyError, UsageError
from verifiers.testing import Reply

WORDS = ["crane", "bread", "apple", "stone"]


class FakeWordle:
    """Just enough of a TextArena game: a secret word, three tries, feedback that gives the word away."""

    def __init__(self) -> None:
        self.word_list = WORDS
        self.dictionary = {"large": "read-only"}
        self.state = types.SimpleNamespace(game_state={}, done=False, game_info={})
        self.tries = 0

    def reset(self, num_players: int) -> None:
        assert num_players == 1

    def get_observation(self) -> tuple[int, str]:
        secret = self.state.game_state.get("secret_word", "?")
        return 0, "Guess the word." if not self.tries else f"Try {self.tries} was wrong; it is {secret}."

    def step(self, guess: str) -> tuple[bool, dict]:
        self.tries += 1
        if guess == self.state.game_state["secret_word"] or self.tries >= 3:
            self.state.done = True
            won = guess == self.state.game_state["secret_word"]
            self.state.game_info = {0: {"reason": "Solved!" if won else "Out of tries."}}
        return self.state.done, {}


@pytest.fixture
def fake_textarena(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    downloads: list[tuple] = []
    nltk = types.ModuleType("nltk")
    nltk.download = lambda *args, **kwargs: downloads.append((args, kwargs))  # type: ignore[attr-defined]
    textarena = types.ModuleType("textarena")
    made: list[str] = []

    def make(env_id: str) -> FakeWordle:
        made.append(env_id)
        return FakeWordle()

    textarena.make = make  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nltk", nltk)
    monkeypatch.setitem(sys.modules, "textarena", textarena)
    return types.SimpleNamespace(downloads=downloads, made=made)


def guesser(request) -> Reply:
    """First a wrong guess, then the word the feedback gave away."""
    text = request.last_user_text
    word = text.rsplit(" ", 1)[-1].rstrip(".") if "wrong" in text else "wrong"
    return Reply(f"<think>hmm</think><guess>{word}</guess>")


def solved(completion) -> float:
    return float(completion[-1]["content"] == "Solved!")


def test_the_name_imports_and_construction_names_the_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nltk", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "textarena", None)

    class MyWordle(vf.TextArenaEnv):  # subclassing at import time works without the packages
        pass

    with pytest.raises(MissingDependencyError, match="pip install textarena nltk") as caught:
        MyWordle()
    assert isinstance(caught.value, ImportError) and isinstance(caught.value, UsageError)


def test_dataset_is_drawn_from_the_word_list_with_the_seed(fake_textarena) -> None:
    env = vf.TextArenaEnv(num_train_examples=5, num_eval_examples=2, seed=7)
    again = vf.TextArenaEnv(num_train_examples=5, num_eval_examples=2, seed=7)
    answers = list(env.get_dataset()["answer"]) + list(env.get_eval_dataset()["answer"])
    assert answers == list(again.get_dataset()["answer"]) + list(again.get_eval_dataset()["answer"])
    random.seed(7)  # the classic releases' draw: the global generator, seeded
    assert answers == [random.choice(WORDS) for _ in range(7)]
    assert env.get_dataset()[0]["question"] == "Guess the word."
    assert fake_textarena.made[0] == "Wordle-v0"
    assert all(kwargs.get("quiet") for _, kwargs in fake_textarena.downloads)
    assert vf.TextArenaEnv(num_train_examples=2).eval_dataset is None


async def test_a_game_is_played_to_its_verdict(fake_textarena, serve, client_for) -> None:
    client = client_for(serve(guesser))
    env = vf.TextArenaEnv(num_train_examples=2, rubric=vf.Rubric(funcs=[solved]), max_turns=5)
    results = await env.evaluate(client, "m")
    assert results.reward == [1.0, 1.0]
    output = results["outputs"][0]
    assert [m["role"] for m in output["completion"]] == ["assistant", "user", "assistant", "user"]
    assert output["completion"][1]["content"].startswith("Try 1 was wrong")
    assert all("ta_env" not in state for state in results.state)  # dropped by the cleanup handler


async def test_feedback_fn_shapes_the_reply_and_a_tuple_era_subclass_gets_pairs(fake_textarena, serve,
                                                                                client_for) -> None:
    class TupleWordle(vf.TextArenaEnv):
        async def is_completed(self, messages, state, **kwargs) -> bool:
            return state.get("final_env_response") is not None

    client = client_for(serve(guesser))
    env = TupleWordle(num_train_examples=1, feedback_fn=str.upper, rubric=vf.Rubric(funcs=[solved]))
    assert env.era == "tuple"
    results = await env.evaluate(client, "m")
    assert results["outputs"][0]["completion"][1]["content"].startswith("TRY 1 WAS WRONG")
    assert results.reward == [0.0]  # the upper-cased feedback no longer gives the word away as written


async def test_each_rollout_gets_its_own_game_sharing_the_large_constants(fake_textarena) -> None:
    env = vf.TextArenaEnv(num_train_examples=1)
    game = (await env.setup_state({"answer": "stone"}))["ta_env"]
    assert game is not env.ta_env and game.state.game_state["secret_word"] == "stone"
    assert "secret_word" not in env.ta_env.state.game_state  # the template is never played
    assert game.dictionary is env.ta_env.dictionary and game.word_list is env.ta_env.word_list


def test_word_groups_are_flattened_and_wrapped_games_unwrapped() -> None:
    from verifiers.envs.textarena_env import _flat_words, _large_constants

    assert _flat_words({"nouns": ["crane", "bread"], "odd": "stone", "more": ("apple",)}) == [
        "crane", "bread", "stone", "apple"]
    inner = FakeWordle()
    shared = _large_constants(types.SimpleNamespace(env=types.SimpleNamespace(env=inner)))
    assert shared == {id(inner.dictionary): inner.dictionary, id(inner.word_list): inner.word_list}
