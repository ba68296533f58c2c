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
        self.game, self.seed, self.feedback_fn = game, seed, feedback_fn
        self.num_train_examples, self.num_eval_examples = num_train_examples, num_eval_examples
        # One game, set up once, is the template every rollout's game is copied from.
        self.ta_env = _started_game(textarena, game)
        self._template_shares = _large_constants(self.ta_env)
        dataset, eval_dataset = self.ta_to_hf()
        if parser is None:
            parser = XMLParser(fields=["think", "guess"], answer_field="guess")
        super().__init__(dataset=dataset, eval_dataset=eval_dataset, system_prompt=system_prompt,
                         parser=parser, rubric=rubric, message_type="chat", **kwargs)

    def ta_to_hf(self) -> tuple[Dataset | None, Dataset | None]:
        """The training and evaluation games: the opening observation and a secret word each."""
        _, opening = self.ta_env.get_observation()
        words = _flat_words(self.ta_env.word_list)
        rng = random.Random(self.seed)  # the same draws as seeding the global generator, without touching it
        rows = [{"question": opening, "answer": rng.choice(words)}
                for _ in range(self.num_train_examples + self.num_eval_examples)]
        train, evaluation = rows[: self.num_train_examples], rows[self.num_train_examples:]
        # An empty split is no split (an empty Dataset has no columns to format).
        return _dataset_or_none(train), _dataset_or_none(evaluation)

    async def setup_state(self, state: State, **kwargs: Any) -> State:
        """A game of its own for the rollout, whose secret word is the row's answer."""
        state["ta_env"] = await asyncio.to_thread(self._game_for, state["answer"])
        return state

    def _game_for(self, secret: str) -> Any:
        """A copy of the template game with ``secret`` as its word (copying takes a while: run off the loop)."""
        # The large constants go into the copy by reference: they are never written to.
        game = copy.deepcopy(self.ta_env, dict(self._template_shares))
        game.state.game_state["secret_word"] = secret
        return game

    async def env_response(self, messages: Any, state: State, **kwargs: Any) -> Any:
        """Play the model's guess; the game's feedback, or its closing verdict, is the reply."""
        move = str(self.parser.parse_answer(messages))
        over, text = await asyncio.to_thread(_play_move, state["ta_env"], move)
        reply = [UserMessage(content=str(text if over else self.feedback_fn(text)))]
        if over:
            state["final_env_response"] = reply  # the verdict is the last message of the rollout
        return self.conventions.hook_reply(reply, state)

    @cleanup
    async def cleanup_ta_env(self, state: State) -> None:
        """Drop the rollout's game (it is neither serialisable nor needed after the rollout)."""
        state.pop("ta_env", None)


def _started_game(textarena: ModuleType, game_id: str) -> Any:
    """A new single-player game ``game_id``, reset and ready for its first move."""
    with _quiet_nltk():
        game = textarena.make(env_id=game_id)
    game.reset(num_players=1)
    return game


def _play_move(game: Any, move: str) -> tuple[bool, str]:
    """Make ``move``; then ``(True, verdict)`` when that ended the game, else ``(False, observation)``."""
    game.step(move)
    if game.state.done:
        return True, game.state.game_info[0]["reason"]
    return False, game.get_observation()[1]


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
        kwargs["quiet"] = True  # whatever the caller asked for
        return loud(*args, **kwargs)

    nltk.download = quiet
    try:
        yield
    finally:
        nltk.download = loud


def _flat_words(words: Any) -> list[str]:
    """The game's candidate secret words as one list.

    Some games group their words by category in a dict whose values are word
    lists or single words; the groups are joined in the dict's order.
    """
    if not isinstance(words, dict):
        return list(words)
    flat: list[str] = []
    for group in words.values():
        if isinstance(group, (list, tuple)):
            flat.extend(group)
        else:
            flat.append(group)
    return flat


# Attributes of a game that hold large data no move ever changes (the dictionary is tens of MB).
_CONSTANT_ATTRIBUTES = ("dictionary", "word_list")


def _large_constants(game: Any) -> dict[int, Any]:
    """The game's never-written large objects, keyed by ``id``: given to ``copy.deepcopy`` as its
    memo, they are shared by every copy instead of copied into it."""
    core = _unwrapped(game)
    found = (getattr(core, name, None) for name in _CONSTANT_ATTRIBUTES)
    return {id(value): value for value in found if value is not None}


def _unwrapped(game: Any) -> Any:
    """The game inside TextArena's wrappers (each keeps the game it wraps as ``.env``)."""
    return _unwrapped(game.env) if hasattr(game, "env") else game


def _dataset_or_none(rows: list[dict[str, Any]]) -> Dataset | None:
    return Dataset.from_list(rows) if rows else None


__all__ = ["TextArenaEnv"]
