"""The ``vf-eval`` command an environment page tells visitors to copy, built from the package's own defaults.

The values come from the ``[tool.verifiers.eval]`` table of the uploaded sdist's ``pyproject.toml``,
which anyone who can publish writes. A page that pasted them into a shell command as they are would
let a package run code in the shell of whoever copies it (``num_examples = "5; rm -rf ~ #"``). So
each value is checked against what ``vf-eval`` itself accepts for its flag (numbers must be numbers
of the right kind and range); a value that fails is left out of the command with a note saying why,
and every word of the command is quoted with :func:`shlex.quote` all the same.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

# Placeholders the visitor replaces; written as shell words that need no quoting.
_TAIL = ("-m", "MODEL", "-b", "BASE_URL")
_MAX_SHOWN_VALUE = 60
_MAX_INT = 1_000_000_000  # far beyond any real eval; keeps the shown text short


@dataclass(frozen=True)
class EvalCommand:
    """The command as text and a note for each ``[tool.verifiers.eval]`` value left out of it."""

    text: str
    notes: tuple[str, ...] = ()


def _integer(minimum: int, allow_all: bool) -> Callable[[Any], str | None]:
    """A check for an integer flag: ``None`` when ``value`` is fine, else what is wrong with it."""

    def check(value: Any) -> str | None:
        # TOML booleans are Python ints; vf-eval would not take ``true`` as a count either.
        if isinstance(value, bool) or not isinstance(value, int):
            return "is not an integer"
        if allow_all and value == -1:
            return None
        if not minimum <= value <= _MAX_INT:
            lowest = f"-1 (all) or {minimum}" if allow_all else str(minimum)
            return f"is out of range (from {lowest} to {_MAX_INT})"
        return None

    return check


@dataclass(frozen=True)
class _Flag:
    option: str
    check: Callable[[Any], str | None]


# The table keys the page turns into flags, with the rules of vf-eval's EvalConfig for each.
_FLAGS = {
    "num_examples": _Flag("-n", _integer(1, allow_all=True)),
    "rollouts_per_example": _Flag("-r", _integer(1, allow_all=False)),
}


def _shown(value: Any) -> str:
    """A value as a note quotes it: its TOML-ish repr, cut short."""
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN_VALUE else text[: _MAX_SHOWN_VALUE - 1] + "…"


def eval_command(env_name: str, defaults: Iterable[tuple[str, Any]]) -> EvalCommand:
    """``vf-eval ENV [-n N] [-r R] -m MODEL -b BASE_URL`` from an environment's ``[tool.verifiers.eval]`` items.

    Keys the page has no flag for are skipped silently (``vf-eval`` reads them itself from a local
    checkout); a known key with a bad value is dropped and explained in ``notes``.
    """
    words = ["vf-eval", env_name]
    notes = []
    for key, value in defaults:
        flag = _FLAGS.get(key)
        if flag is None:
            continue
        problem = flag.check(value)
        if problem is not None:
            notes.append(f"[tool.verifiers.eval] {key} = {_shown(value)} {problem}; left out of the command.")
            continue
        words += [flag.option, str(value)]
    return EvalCommand(shlex.join([*words, *_TAIL]), tuple(notes))


__all__ = ["EvalCommand", "eval_command"]
