"""MathRubric: reward 1.0 when the final answer is mathematically equal to the reference.

The answer is taken from the completion's last ``\\boxed{}`` (after any think
block) and compared with math-verify, so ``\\frac{1}{2}`` matches ``0.5``::

    rubric = vf.MathRubric()            # needs `pip install math-verify`
    env = vf.SingleTurnEnv(dataset=ds, system_prompt=BOXED_SYSTEM_PROMPT, rubric=rubric)

The two classic eras scored this differently, and environments rely on each:

* State era (0.3.0): the metric is ``correct_answer``; a reply without
  ``</think>`` is read whole, but only a complete ``\\boxed{...}`` is an answer.
* tuple era (0.1.x): the metric is ``correct_answer_reward_func``; a reply
  without ``</think>`` has no answer, and after it unboxed text is the answer.

A MathRubric scores in the State era unless told otherwise by
:meth:`MathRubric.use_era`, which a tuple-era ``MultiTurnEnv`` calls on its
rubrics when it is built. The era is never switched while scoring, so one
rubric scores the same whichever way it is called. A parser you pass yourself
is used as given in both eras.

Checks run in a shared process pool with a hard timeout (see
:mod:`verifiers.rubrics.math_verify_pool`); a check that times out scores 0.0
and is counted as a failure of the answer metric.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from typing import Any, get_args

from verifiers.data.answers import extract_boxed_answer
from verifiers.errors import UsageError
from verifiers.parsers.maybe_think_parser import MaybeThinkParser
from verifiers.parsers.parser import Parser, require_str
from verifiers.parsers.think_parser import THINK_CLOSE
from verifiers.rollout.era import Era
from verifiers.rubrics.math_verify_pool import DEFAULT_TIMEOUT_SECONDS, verify_answer
from verifiers.rubrics.rubric import Rubric
from verifiers.types import Messages

_ERAS: tuple[str, ...] = get_args(Era)


class MathAnswerParser(MaybeThinkParser):
    """MathRubric's default parser: the boxed answer after the think block, read as ``era`` did.

    * ``era="state"`` (0.3.0's ``MaybeThinkParser`` with strict boxed extraction):
      the text after the last ``</think>`` (all of it without one); ``""`` unless
      it holds a complete ``\\boxed{...}``.
    * ``era="tuple"`` (0.1.x's ``ThinkParser(extract_boxed_answer)``): ``""``
      without ``</think>``; else the last boxed content, or the text itself when
      it has no box.
    """

    def __init__(self, era: Era = "state", **kwargs: Any) -> None:
        super().__init__(extract_fn=self._extract, **kwargs)
        self.era: Era = _checked_era(era)

    def parse(self, text: str) -> Any:
        """The answer in ``text`` (see the class docstring)."""
        require_str(text, type(self).__name__)
        if self.era == "tuple" and THINK_CLOSE not in text:
            return self.extract_fn("")
        return super().parse(text)

    def _extract(self, text: str) -> str:
        return extract_boxed_answer(text, strict=self.era == "state")


class MathRubric(Rubric):
    """A rubric with the math answer check (weight 1.0) added after ``funcs``.

    The check is reported as ``correct_answer`` in the State era and as
    ``correct_answer_reward_func`` in the tuple era (see the module docstring).

    Args:
        parser: extracts the answer; default :class:`MathAnswerParser`, which follows the era.
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
        parser = parser if parser is not None else MathAnswerParser()
        super().__init__(funcs=funcs, weights=weights, parser=parser, **kwargs)
        self.timeout_seconds = timeout_seconds
        self.era: Era = "state"
        self._answer_func: Callable[..., Any] = self.correct_answer
        self.add_reward_func(self._answer_func)

    def use_era(self, era: Era) -> None:
        """Score as the classic release of ``era`` did: the answer metric's name and the default parser's reading."""
        era = _checked_era(era)
        if isinstance(self.parser, MathAnswerParser):
            self.parser.era = era
        if era == self.era:
            return
        replacement = self.correct_answer_reward_func if era == "tuple" else self.correct_answer
        # Swapped in place, so the check keeps its position and weight among the rubric's functions.
        self.funcs[:] = [replacement if func == self._answer_func else func for func in self.funcs]
        self._answer_func = replacement
        self.era = era

    async def correct_answer(self, parser: Parser, completion: Messages, answer: Any, **kwargs: Any) -> float:
        """1.0 if the parsed response equals ``answer`` per math-verify, else 0.0 (also for an empty response)."""
        response = parser.parse_answer(completion)
        if not response:
            return 0.0
        return 1.0 if await verify_answer(str(answer), str(response), self.timeout_seconds) else 0.0

    async def correct_answer_reward_func(
        self, parser: Parser, completion: Messages, answer: Any, **kwargs: Any
    ) -> float:
        """The tuple era's name for :meth:`correct_answer` (its metric is reported under this name)."""
        return await self.correct_answer(parser, completion, answer, **kwargs)


def _checked_era(era: Any) -> Era:
    if era not in _ERAS:
        raise ValueError(f"era must be one of {list(_ERAS)}, got {era!r}")
    return era


def require_math_verify() -> None:
    """Raise :class:`UsageError` with the install command when math-verify is missing."""
    # find_spec, not import: the parent process never needs math-verify itself
    # (only the workers do), and importing it pulls in sympy.
    if importlib.util.find_spec("math_verify") is None:
        raise UsageError("MathRubric needs the math-verify package: pip install math-verify (or verifiers[math])")


__all__ = ["MathAnswerParser", "MathRubric", "require_math_verify"]
