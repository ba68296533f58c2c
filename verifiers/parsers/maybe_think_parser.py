"""MaybeThinkParser: drop a think block when there is one, keep the text otherwise."""

from __future__ import annotations

from typing import Any

from verifiers.parsers.parser import Parser, require_str
from verifiers.parsers.think_parser import THINK_CLOSE


class MaybeThinkParser(Parser):
    """Parse the stripped text after the last ``</think>``, or the whole stripped text.

    For models whose server may or may not have removed the reasoning already,
    so an answer without ``</think>`` is still an answer (unlike :class:`ThinkParser`).

    >>> MaybeThinkParser().parse("<think>hmm</think> 42"), MaybeThinkParser().parse(" 42 ")
    ('42', '42')
    """

    def parse(self, text: str) -> Any:
        """Apply ``extract_fn`` to the stripped text after the last ``</think>`` (all of it if absent)."""
        require_str(text, type(self).__name__)
        return self.extract_fn(text.split(THINK_CLOSE)[-1].strip())
