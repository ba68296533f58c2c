"""MathRubric: reward 1.0 when the final answer is mathematically equal to the reference.

The answer is taken from the completion's last ``\\boxed{}`` (after any think
block) and compared with math-verify, so ``\\frac{1}{2}`` matches ``0.5``::

    rubric = vf.MathRubric()            # needs `pip install math-verify`
    env = vf.SingleTurnEnv(dataset=ds, system_prompt=BOXED_SYSTEM_PROMPT, rubric=rubric)

Checks run in a shared process pool with a hard timeout (see
:mod:`verifiers.rubrics.math_verify_pool`); a check that times out scores 0.0
and is counted as a failure of ``correct_answer_reward_func``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from typing import Any

from verifiers.data.answers import extract_boxed_answer
from verifiers.errors import UsageError
from verifiers.parsers.maybe_think_parser import MaybeThinkParser
from verifiers.parsers.parser import Parser
from verifiers.rubrics.math_verify_pool import DEFAULT_TIMEOUT_SECONDS, verify_answer
from verifiers.rubrics.rubric import Rubric
from verifiers.types import Messages


class MathRubric(Rubric):
    """A rubric with ``correct_answer_reward_func`` (weight 1.0) added after ``funcs``.

    Args:
        parser: extracts the answer; default ``MaybeThinkParser(extract_fn=extract_boxed_answer)``.
        timeout_seconds: hard limit on one math-verify check.
    """

    def __init__(
        self,
        funcs: Sequence[Callable[..., Any]] | None = None,
        weights: Sequence[float] | None = None,
        parser: Parser | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        **kwargs: Any,
    ) -> None:
        require_math_verify()
        if timeout_seconds <= 0:
            raise ValueError(f"timeout_seconds must be positive, got {timeout_seconds}")
        parser = parser if parser is not None else MaybeThinkParser(extract_fn=extract_boxed_answer)
        super().__init__(funcs=funcs, weights=weights, parser=parser, **kwargs)
        self.timeout_seconds = timeout_seconds
        self.add_reward_func(self.correct_answer_reward_func)

    async def correct_answer_reward_func(
        self, parser: Parser, completion: Messages, answer: Any, **kwargs: Any
    ) -> float:
        """1.0 if the parsed response equals ``answer`` per math-verify, else 0.0 (also for an empty response)."""
        response = parser.parse_answer(completion)
        if not response:
            return 0.0
        return 1.0 if await verify_answer(str(answer), str(response), self.timeout_seconds) else 0.0


def require_math_verify() -> None:
    """Raise :class:`UsageError` with the install command when math-verify is missing."""
    # find_spec, not import: the parent process never needs math-verify itself
    # (only the workers do), and importing it pulls in sympy.
    if importlib.util.find_spec("math_verify") is None:
        raise UsageError("MathRubric needs the math-verify package: pip install math-verify (or verifiers[math])")


__all__ = ["MathRubric", "require_math_verify"]
