"""A CPU-time budget for one markdown-it parse, so no README can hold a Hub thread for long.

markdown-it-py parses in time linear in its input, but with a large constant on some inputs: a
run of ``[`` makes every bracket try to open a link label, about 20 µs of pure Python per
character here (a 1 MB run took ~23 s). Capping the input bounds that; the budget bounds what the
cap still lets through. :func:`with_budget` adds a rule that runs first in the inline and block
rule chains (markdown-it calls them at every position it tries), matches nothing, and raises
:class:`OverBudget` once the parse has used more than its CPU seconds (``time.thread_time``, so
other threads' work on a busy server is not charged to it). Callers fall back to something cheap.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_inline import StateInline

_ENV_KEY = "hub_cpu_deadline"


class OverBudget(Exception):
    """A parse used more CPU time than its budget (control flow inside the Hub; never shown to users)."""


@dataclass
class Deadline:
    """The thread CPU time at which a parse must stop."""

    seconds: float
    at: float = field(init=False)

    def __post_init__(self) -> None:
        self.at = time.thread_time() + self.seconds

    def check(self) -> None:
        if time.thread_time() > self.at:
            raise OverBudget(f"markdown parse used more than {self.seconds:.2f} s of CPU")


def _deadline(env: Any) -> Deadline | None:
    found = env.get(_ENV_KEY) if isinstance(env, dict) else None
    return found if isinstance(found, Deadline) else None


def _inline_rule(state: StateInline, silent: bool) -> bool:
    deadline = _deadline(state.env)
    if deadline is not None:
        deadline.check()
    return False  # never matches: the real rules run next


def _block_rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    deadline = _deadline(state.env)
    if deadline is not None:
        deadline.check()
    return False


def with_budget(md: MarkdownIt) -> MarkdownIt:
    """``md`` with the budget rules first in its inline and block chains (they act only when the
    parse's ``env`` holds a :class:`Deadline`, see :func:`budget_env`)."""
    md.inline.ruler.before(md.inline.ruler.get_all_rules()[0], "hub_cpu_budget", _inline_rule)
    md.block.ruler.before(md.block.ruler.get_all_rules()[0], "hub_cpu_budget", _block_rule,
                          {"alt": ["paragraph", "reference", "blockquote", "list"]})
    return md


def budget_env(seconds: float) -> dict[str, Any]:
    """A markdown-it ``env`` that limits the parse it is passed to to ``seconds`` of CPU from now."""
    return {_ENV_KEY: Deadline(seconds)}


__all__ = ["Deadline", "OverBudget", "budget_env", "with_budget"]
