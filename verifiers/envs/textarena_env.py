"""``TextArenaEnv``: a single-player TextArena game (Wordle by default) played over several turns.

Needs the third-party ``textarena`` and ``nltk`` packages (``pip install textarena nltk``);
the class imports without them, and constructing one without them raises
:class:`~verifiers.errors.MissingDependencyError` with that command.

Each dataset row is one game: the question is the game's opening observation and
the answer its secret word, drawn with ``seed``. Every model turn is parsed for a
guess (``<guess>`` of an ``XMLParser(["think", "guess"])`` by default) and played;
the game's feedback, passed through ``feedback_fn``, is the next user message, and
the game's closing verdict ends the rollout. Scoring is up to the rubric::

    env = vf.TextArenaEnv(game="Wordle-v0", num_train_examples=100, rubric=vf.Rubric(funcs=[solved]))
"""

from __future__ import annotations

import asyncio
import copy
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from datasets import Dataset

from verifiers.decorators import cleanup
from verifiers.envs.multiturn_env import MultiTurnEnv
from verifiers.messages import UserMessage
from verifiers.optional import import_optional
from verifiers.parsers.parser import Parser
from verifiers.parsers.xml_parser import XMLParser
from verifiers.rubrics.rubric import Rubric
from verifiers.state import State

INSTALL = "pip install textarena nltk"
# Word lists the Wordle games read; fetched once, quietly (nltk prints progress otherwise).
_NLTK_DATA = ("words", "averaged_perceptron_tagger_eng")


def _identity(text: str) -> str:
    return text


class TextArenaEnv(MultiTurnEnv):
    """A TextArena game as a multi-turn environment (see the module docstring).

    Args:
        game: the TextArena environment id.
        num_train_examples / num_eval_examples: games in the training / evaluation dataset
            (none when 0).
        parser: reads the guess from the model's turn; default ``XMLParser(["think", "guess"])``.
        feedback_fn: turns the game's observation into the next user message.
        seed: seed of the secret-word draw.
    """

    def __init__(
        self,
        game: str = "Wordle-v0",
        num_train_examples: int = 1000,
        num_eval_examples: int = 0,
        system_prompt: str | None = None,
        parser: Parser | None = None,
        rubric: Rubric | None = None,
        feedback_fn: Callable[[str], str] = _identity,
        seed: int = 0,
        **kwargs: Any,
    ) -> None:
        textarena = _import_textarena()
        self.game = game
        self.num_train_examples = num_train_examples
        self.num_eval_examples = num_eval_examples
        self.seed = seed
        self.feedback_fn = feedback_fn
        with _quiet_nltk():
            self.ta_env = textarena.make(env_id=game)
        self.ta_env.reset(num_players=1)
        self._shared = _read_only_parts(self.ta_env)
        dataset, eval_dataset = self.ta_to_hf()
        parser = parser if parser is not None else XMLParser(fields=["think", "guess"], answer_field="guess")
        super().__init__(dataset=dataset, eval_dataset=eval_dataset, system_prompt=system_prompt,
                         parser=parser, rubric=rubric, message_type="chat", **kwargs)

    def ta_to_hf(self) -> tuple[Dataset | None, Dataset | None]:
        """The training and evaluation games: the opening observation and a secret word each."""
        _, opening = self.ta_env.get_observation()
        words = _word_list(self.ta_env.word_list)
        rng = random.Random(self.seed)  # the same draws as seeding the global generator, without touching it
        rows = [{"question": opening, "answer": rng.choice(words)}
                for _ in range(self.num_train_examples + self.num_eval_examples)]
        train, evaluation = rows[: self.num_train_examples], rows[self.num_train_examples:]
        # An empty split is no split (an empty Dataset has no columns to format).
        return _dataset_or_none(train), _dataset_or_none(evaluation)

    async def setup_state(self, state: State, **kwargs: Any) -> State:
        """A game of its own for the rollout, whose secret word is the row's answer."""
        # The dictionaries are shared, not copied: they are large and never written to.
        game = await asyncio.to_thread(copy.deepcopy, self.ta_env, dict(self._shared))
        game.state.game_state["secret_word"] = state["answer"]
        state["ta_env"] = game
        return state

    async def env_response(self, messages: Any, state: State, **kwargs: Any) -> Any:
        """Play the model's guess; the game's feedback, or its closing verdict, is the reply."""
        game = state["ta_env"]
        guess = self.parser.parse_answer(messages)
        await asyncio.to_thread(game.step, str(guess))
        if game.state.done:
            reply = [UserMessage(content=str(game.state.game_info[0]["reason"]))]
            state["final_env_response"] = reply
        else:
            _, observation = await asyncio.to_thread(game.get_observation)
            reply = [UserMessage(content=str(self.feedback_fn(observation)))]
        return (reply, state) if self.era == "tuple" else reply

    @cleanup
    async def cleanup_ta_env(self, state: State) -> None:
        """Drop the rollout's game (it is neither serialisable nor needed after the rollout)."""
        state.pop("ta_env", None)


def _import_textarena() -> ModuleType:
    nltk = import_optional("nltk", "TextArenaEnv", INSTALL)
    with _quiet_nltk():
        textarena = import_optional("textarena", "TextArenaEnv", INSTALL)  # downloads nltk data on import
        for package in _NLTK_DATA:
            nltk.download(package, quiet=True)
    return textarena


@contextmanager
def _quiet_nltk() -> Iterator[None]:
    """nltk's downloads (textarena starts some itself) made quiet while inside the block."""
    import nltk

    loud = nltk.download

    def quiet(*args: Any, **kwargs: Any) -> Any:
        return loud(*args, **{**kwargs, "quiet": True})

    nltk.download = quiet
    try:
        yield
    finally:
        nltk.download = loud


def _word_list(words: Any) -> list[str]:
    """The game's candidate secret words; some games keep them per category in a dict."""
    if isinstance(words, dict):
        return [w for group in words.values() for w in (group if isinstance(group, (list, tuple)) else [group])]
    return list(words)


def _read_only_parts(game: Any) -> dict[int, Any]:
    """A deepcopy memo that shares the game's dictionary and word list instead of copying them."""
    inner = game
    while hasattr(inner, "env"):  # wrappers hold the game in .env
        inner = inner.env
    parts = (getattr(inner, "dictionary", None), getattr(inner, "word_list", None))
    return {id(part): part for part in parts if part is not None}


def _dataset_or_none(rows: list[dict[str, Any]]) -> Dataset | None:
    return Dataset.from_list(rows) if rows else None


__all__ = ["TextArenaEnv"]
