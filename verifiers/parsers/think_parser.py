"""ThinkParser: the answer is what follows the model's ``</think>``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from verifiers.parsers.parser import Parser, RewardFn, identity, require_str

if TYPE_CHECKING:
    from verifiers.types import Messages

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


class ThinkParser(Parser):
    """Parse the text after the last ``</think>``; without one, parse ``""``.

    Meant for models that write ``<think>...</think>`` themselves and whose
    server does not strip it. If the server or chat template removes the
    reasoning, use :class:`~verifiers.parsers.maybe_think_parser.MaybeThinkParser`.

    >>> ThinkParser(extract_fn=str.strip).parse("<think>hmm</think> 42")
    '42'
    """

    def __init__(self, extract_fn: Callable[[str], Any] = identity, **kwargs: Any) -> None:
        super().__init__(extract_fn=extract_fn, **kwargs)
        self.logger.warning(
            "ThinkParser expects every answer to contain <think>...</think> written by the model; "
            "answers without </think> parse as empty. Models whose server or chat template strips "
            "reasoning (e.g. Qwen3, DeepSeek-R1) need MaybeThinkParser or Parser instead."
        )

    def parse(self, text: str) -> Any:
        """Apply ``extract_fn`` to the stripped text after the last ``</think>`` (``""`` if absent)."""
        require_str(text, type(self).__name__)
        after = text.split(THINK_CLOSE)[-1].strip() if THINK_CLOSE in text else ""
        return self.extract_fn(after)

    def get_format_reward_func(self) -> RewardFn:
        """Reward for the think format, averaged over assistant messages (0.0 when there are none).

        A message scores 1.0 when its stripped text starts with ``<think>``, it holds
        exactly one ``<think>`` and one ``</think>``, and something (even whitespace)
        follows ``</think>``; otherwise 0.0.
        """

        def format_reward_func(completion: Messages = "", **kwargs: Any) -> float:
            texts = self._assistant_texts(completion, separator=" ")
            if not texts:
                return 0.0
            return sum(_follows_think_format(t) for t in texts) / len(texts)

        return format_reward_func


def _follows_think_format(text: str) -> float:
    well_formed = (
        text.strip().startswith(THINK_OPEN)
        and text.count(THINK_OPEN) == 1
        and text.count(THINK_CLOSE) == 1
        and len(text.split(THINK_CLOSE)[-1]) > 0
    )
    return 1.0 if well_formed else 0.0
