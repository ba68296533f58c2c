"""A length penalty (a thinking budget): the reward drops with the distance from a target length.

The prompt asks for a length ("spend about 512 tokens thinking"), and the reward
is reduced by how far the completion's length ``n`` lands from that target ``t``,
in the manner of L1 and INTELLECT-2's length control::

    deviation = |n - t|            penalize="both"  (hit the target)
    deviation = max(0, n - t)      penalize="over"  (a budget: only going over costs)
    reward    = max(floor, base - alpha * deviation)

``base`` is the wrapped rubric's reward (``rubric=``), or 0 for a rubric that
only penalises and is combined with the task's rubric in a :class:`RubricGroup`
(then ``floor`` bounds the penalty term alone). Targets are fixed
(``target_tokens=``) or read per row from ``info["target_tokens"]``, which
:func:`add_length_instruction` writes together with the prompt's instruction,
so a dataset can sample a different target for every row::

    ds = vf.add_length_instruction(ds, [256, 512, 1024], seed=0)
    env = vf.SingleTurnEnv(dataset=ds, rubric=vf.LengthPenaltyRubric(rubric=task_rubric, alpha=0.001, floor=-1.0))
"""

from __future__ import annotations

import json
import math
import numbers
import random
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple, cast, get_args

from datasets import Dataset

from verifiers.parsers.parser import Parser
from verifiers.rubrics.injection import RolloutArguments
from verifiers.rubrics.rubric import Rubric
from verifiers.rubrics.rubric_group import RubricGroup
from verifiers.types import RolloutScore

Unit = Literal["tokens", "chars", "words"]
Penalize = Literal["both", "over"]

DEFAULT_ALPHA = 0.001
"""Reward lost per token of deviation: missing the target by 1,000 tokens costs a whole 0-1 task reward."""

DEFAULT_CHARS_PER_TOKEN = 4.0
"""Characters per token when a token count has to be estimated from text (a usual figure for English BPE)."""

TARGET_INSTRUCTION = "Spend about {target} tokens thinking before you give your final answer."
"""The instruction :func:`add_length_instruction` adds by default; it fits ``penalize="both"``."""

BUDGET_INSTRUCTION = "Spend at most {target} tokens thinking before you give your final answer."
"""An instruction that fits ``penalize="over"``."""


class Length(NamedTuple):
    """A measured completion length and where it came from."""

    value: float
    source: Literal["token_ids", "usage", "estimate", "chars", "words"]
    """``token_ids``: the server's completion token ids; ``usage``: its reported token count;
    ``estimate``: characters / ``chars_per_token`` (no token counts in the state);
    ``chars`` / ``words``: the text itself, when that was the unit asked for."""


def check_length(name: str, value: Any) -> float:
    """``value`` as a float when it is a finite number >= 0; otherwise a ``TypeError``/``ValueError``
    naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number (of tokens), got {value!r} ({type(value).__name__})")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return number


def measure_length(completion: Any, state: Mapping[str, Any] | None = None, *, unit: Unit = "tokens",
                   chars_per_token: float = DEFAULT_CHARS_PER_TOKEN) -> Length:
    """The length of what the model produced in a rollout.

    With ``unit="tokens"``: the completion token ids of every trajectory step when
    the server returned them for every step, else the server's ``usage`` count
    summed over the turns (``state["total_completion_tokens"]``), else an estimate:
    the model's text length divided by ``chars_per_token``. ``"chars"`` and
    ``"words"`` (whitespace-separated) measure the model's text. The model's text is
    its assistant messages (content, ``reasoning_content`` and tool-call arguments);
    environment and tool messages do not count.

    >>> measure_length([{"role": "assistant", "content": "two words"}], unit="words")
    Length(value=2.0, source='words')
    """
    state = state if isinstance(state, Mapping) else {}
    if unit == "tokens":
        steps = [step for step in state.get("trajectory") or [] if isinstance(step, Mapping)]
        ids = [(step.get("tokens") or {}).get("completion_ids") for step in steps]
        if steps and all(isinstance(i, Sequence) for i in ids):
            return Length(float(sum(len(cast(Sequence[int], i)) for i in ids)), "token_ids")
        usage = state.get("total_completion_tokens")
        if isinstance(usage, (int, float)) and not isinstance(usage, bool) and usage > 0:
            return Length(float(usage), "usage")
        return Length(len(_model_text(completion, state)) / chars_per_token, "estimate")
    text = _model_text(completion, state)
    return Length(float(len(text.split())), "words") if unit == "words" else Length(float(len(text)), "chars")


class LengthPenaltyRubric(RubricGroup):
    """Reward minus ``alpha`` times the completion's distance from a target length, floored.

    ``reward = max(floor, base - alpha * deviation)`` with ``deviation = |n - t|``
    (``penalize="both"``) or ``max(0, n - t)`` (``"over"``), ``n`` the completion's
    length (:func:`measure_length`), ``t`` the row's target and ``base`` the wrapped
    rubric's reward, or 0 without one. Metrics: ``length_penalty`` (``-alpha * deviation``,
    before the floor), ``completion_length`` and ``target_length`` (weight 0), besides
    the wrapped rubric's.

    Args:
        target_tokens: the target for rows that name none; ``None``: every row must.
        alpha: reward lost per unit of deviation (token, or the ``unit`` chosen).
        rubric: the task's rubric to wrap, so that ``floor`` bounds the total reward.
            Without it this rubric scores the penalty alone; add it to the task's
            rubric with ``vf.RubricGroup([task_rubric, penalty])``.
        floor: the least reward this rubric gives (``None``: unbounded below).
        penalize: ``"both"`` (too short and too long cost alike) or ``"over"``.
        unit: ``"tokens"`` (see :func:`measure_length` for the text fallback), ``"chars"``, ``"words"``.
        chars_per_token: the estimate's ratio when a rollout has no token counts.
        target_key: the ``info`` key (or dataset column, State era) that holds a row's target;
            a row's own target beats ``target_tokens``.

    Raises ``TypeError``/``ValueError`` on a bad argument. A row whose target is
    missing or bad fails its length functions, which then score 0 (no penalty)
    and are counted in ``failure_counts`` and ``state["scoring_errors"]``.

    Example: ``target_tokens=100, alpha=0.01, floor=-1.0`` around a task reward of 1.0:
    150 tokens give ``1.0 - 0.01 * 50 = 0.5``; 400 tokens give ``max(-1.0, 1.0 - 3.0) = -1.0``::

        rubric = vf.LengthPenaltyRubric(rubric=vf.Rubric(funcs=[exact]), target_tokens=100, alpha=0.01, floor=-1.0)
    """

    def __init__(
        self,
        *,
        target_tokens: float | None = None,
        alpha: float = DEFAULT_ALPHA,
        rubric: Rubric | None = None,
        floor: float | None = None,
        penalize: Penalize = "both",
        unit: Unit = "tokens",
        chars_per_token: float = DEFAULT_CHARS_PER_TOKEN,
        target_key: str = "target_tokens",
        parser: Parser | None = None,
        **kwargs: Any,
    ) -> None:
        self.target_tokens = None if target_tokens is None else check_length("target_tokens", target_tokens)
        self.alpha = check_length("alpha", alpha)
        self.floor = None if floor is None else _finite("floor", floor)
        if penalize not in get_args(Penalize):
            raise ValueError(f"penalize must be one of {list(get_args(Penalize))}, got {penalize!r}")
        if unit not in get_args(Unit):
            raise ValueError(f"unit must be one of {list(get_args(Unit))}, got {unit!r}")
        self.penalize: Penalize = penalize
        self.unit: Unit = unit
        if check_length("chars_per_token", chars_per_token) == 0:
            raise ValueError("chars_per_token must be > 0")
        self.chars_per_token = float(chars_per_token)
        if not isinstance(target_key, str) or not target_key:
            raise TypeError(f"target_key must be a non-empty string, got {target_key!r}")
        self.target_key = target_key
        if rubric is not None and not isinstance(rubric, Rubric):
            raise TypeError(f"rubric must be a vf.Rubric to wrap, got {type(rubric).__name__}")
        self._warned_estimate = False
        if parser is None and rubric is not None:
            parser = rubric.parser  # the environment compares its parser with its rubric's
        own = Rubric(funcs=[self.length_penalty, self.completion_length, self.target_length],
                     weights=[1.0, 0.0, 0.0], parser=parser)
        super().__init__([rubric, own] if rubric is not None else [own], parser=parser, **kwargs)

    # -- reward functions (bound methods: their names are the metric names) ---------------

    def length_penalty(self, completion: Any, state: Any, info: Any) -> float:
        """``-alpha * deviation`` of this rollout (before the floor)."""
        deviation = self.deviation(self._measure(completion, state), self.target_for(info, state))
        return 0.0 - self.alpha * deviation  # ``0.0 -`` so that no deviation reports 0.0, not -0.0

    def completion_length(self, completion: Any, state: Any) -> float:
        """The measured length (see :func:`measure_length`)."""
        return self._measure(completion, state)

    def target_length(self, info: Any, state: Any) -> float:
        """The target this rollout was scored against."""
        return self.target_for(info, state)

    # -- pieces -------------------------------------------------------------------------------

    def deviation(self, length: float, target: float) -> float:
        """How far ``length`` is from ``target``, as ``penalize`` counts it."""
        return max(0.0, length - target) if self.penalize == "over" else abs(length - target)

    def target_for(self, info: Any, state: Any = None) -> float:
        """The row's target: ``info[target_key]``, else its dataset column, else ``target_tokens``."""
        key = self.target_key
        row = state.get("input") if isinstance(state, Mapping) else None
        if isinstance(info, Mapping) and info.get(key) is not None:
            return check_length(f"info[{key!r}]", info[key])
        if isinstance(row, Mapping) and row.get(key) is not None:
            return check_length(f"the row's {key!r}", row[key])
        if self.target_tokens is None:
            raise ValueError(f"this row has no length target: set info[{key!r}] (vf.add_length_instruction "
                             "does) or give LengthPenaltyRubric(target_tokens=...)")
        return self.target_tokens

    def _measure(self, completion: Any, state: Any) -> float:
        length = measure_length(completion, state, unit=self.unit, chars_per_token=self.chars_per_token)
        if length.source == "estimate" and not self._warned_estimate:
            self._warned_estimate = True
            self.logger.warning(
                "LengthPenaltyRubric: a rollout has no token counts (the server returned neither token ids nor "
                "usage); its length is estimated as characters / %s. Later estimates are not logged",
                self.chars_per_token,
            )
        return length.value

    async def _scores(self, rollouts: list[RolloutArguments], at_once: bool) -> list[RolloutScore]:
        # The floor applies to the sum of the members' rewards, so it must come after RubricGroup adds them up.
        scores = await super()._scores(rollouts, at_once)
        if self.floor is not None:
            for score in scores:
                score.reward = max(self.floor, score.reward)
        return scores


def add_length_instruction(
    dataset: Dataset,
    target_tokens: float | Sequence[float] | None = None,
    *,
    seed: int = 0,
    template: str = TARGET_INSTRUCTION,
    target_key: str = "target_tokens",
    question_key: str = "question",
) -> Dataset:
    """Put a length target in every row's prompt and in its ``info`` for :class:`LengthPenaltyRubric`.

    Args:
        dataset: rows with ``question`` (before an environment formats them) or ``prompt``
            (chat messages, or a completion-mode string).
        target_tokens: one target for every row; a sequence of candidates, from which each
            row draws one (seeded by ``seed`` and the row's index, so the draw is repeatable);
            ``None``: each row's existing ``info[target_key]``.
        template: the instruction, with ``{target}`` where the number goes; it is appended
            to the question, or to the last user message, after a blank line.
        target_key: the ``info`` key the target is written to.

    >>> ds = add_length_instruction(Dataset.from_list([{"question": "2+2?"}]), 64)
    >>> ds[0]["question"], ds[0]["info"]
    ('2+2?\\n\\nSpend about 64 tokens thinking before you give your final answer.', {'target_tokens': 64})
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(f"add_length_instruction takes a datasets.Dataset, got {type(dataset).__name__}")
    if not isinstance(template, str) or "{target}" not in template:
        raise ValueError(f"template must be a string with a {{target}} placeholder, got {template!r}")
    candidates: list[float] | None
    if target_tokens is None:
        candidates = None
    elif isinstance(target_tokens, Sequence) and not isinstance(target_tokens, str):
        candidates = [check_length("each of target_tokens", t) for t in target_tokens]
        if not candidates:
            raise ValueError("target_tokens is an empty sequence; give at least one target")
    else:
        candidates = [check_length("target_tokens", target_tokens)]
    columns = set(dataset.column_names)
    text_column = "prompt" if "prompt" in columns else question_key
    if text_column not in columns:
        raise ValueError(f"dataset needs a 'prompt' or a {question_key!r} column; it has {sorted(columns)}")

    def add(row: dict[str, Any], index: int) -> dict[str, Any]:
        raw_info = row.get("info")
        info = dict(json.loads(raw_info) if isinstance(raw_info, str) and raw_info else raw_info or {})
        if candidates is None:
            if info.get(target_key) is None:
                raise ValueError(f"row {index} has no info[{target_key!r}] and no target_tokens was given")
            target = check_length(f"row {index}'s info[{target_key!r}]", info[target_key])
        elif len(candidates) == 1:
            target = candidates[0]
        else:
            target = random.Random(f"length-target/{seed}/{index}").choice(candidates)
        shown = int(target) if target.is_integer() else target
        info[target_key] = shown
        instruction = template.format(target=shown)
        return {
            text_column: _append_instruction(row[text_column], instruction, index),
            "info": json.dumps(info) if isinstance(raw_info, str) else info,
        }

    return dataset.map(add, with_indices=True)


def _append_instruction(prompt: Any, instruction: str, index: int) -> Any:
    if isinstance(prompt, str):
        return f"{prompt}\n\n{instruction}" if prompt else instruction
    if isinstance(prompt, list):
        messages = [dict(m) for m in prompt]
        for message in reversed(messages):
            if message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, list):  # content parts: the instruction is one more text part
                    message["content"] = [*content, {"type": "text", "text": instruction}]
                else:
                    message["content"] = f"{content}\n\n{instruction}" if content else instruction
                return messages
        raise ValueError(f"row {index}'s prompt has no user message to add the length instruction to")
    raise TypeError(f"row {index}'s prompt is a {type(prompt).__name__}, not a string or a list of messages")


def _model_text(completion: Any, state: Mapping[str, Any]) -> str:
    """What the model wrote: each trajectory step's completion when the state has steps, else the completion."""
    steps = [step for step in state.get("trajectory") or [] if isinstance(step, Mapping)]
    parts = [step.get("completion") for step in steps] if steps else [completion]
    return "".join(_assistant_text(part) for part in parts)


def _assistant_text(messages: Any) -> str:
    if isinstance(messages, str):  # completion mode: the text is the model's
        return messages
    if not isinstance(messages, Sequence):
        return ""
    text: list[str] = []
    for message in messages:
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str):
            text.append(content)
        elif isinstance(content, list):
            text.extend(p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text")
        text.append(str(message.get("reasoning_content") or ""))
        for call in message.get("tool_calls") or []:
            if not isinstance(call, Mapping):
                continue
            function = call.get("function")
            arguments = (function if isinstance(function, Mapping) else call).get("arguments")  # nested or flat
            if isinstance(arguments, str):
                text.append(arguments)
            elif arguments is not None:
                text.append(json.dumps(arguments))
    return "".join(text)


def _finite(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r} ({type(value).__name__})")
    if not math.isfinite(float(value)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


__all__ = [
    "BUDGET_INSTRUCTION",
    "DEFAULT_ALPHA",
    "DEFAULT_CHARS_PER_TOKEN",
    "Length",
    "LengthPenaltyRubric",
    "TARGET_INSTRUCTION",
    "add_length_instruction",
    "check_length",
    "measure_length",
]
