"""multiply-tool: multiply two three-digit numbers with a ``multiply`` tool; reward 1.0 for the exact product.

A multi-turn :class:`vf.ToolEnv` sized for the tiny byte-level model. The user message is the bare
problem (``123*456``); the model cannot multiply three-digit numbers in its head, but it can learn to
copy the factors into a tool call and the tool's reply into its answer::

    user       123*456
    assistant  <tool_call>\\n{"name": "multiply", "arguments": {"a": 123, "b": 456}}\\n</tool_call>
    tool       56088
    assistant  56088

so a correct answer practically requires the call (a guess is right about once in 10^5). Bad replies
never crash a rollout: an unknown tool, arguments that are not JSON, a missing or extra argument, or a
non-integer factor are answered with an error message (by ``ToolEnv``, or by :func:`multiply`), and a
``<tool_call>`` block the server could not parse into a call is answered with a user message saying so.

Problems are pairs of factors in ``[min_value, max_value]`` drawn without replacement from the seed:
evaluation rows come first and never appear in training, and depend only on ``num_eval_examples``, the
range and the seed. :func:`gold_completion` writes the transcript of a correct rollout (the SFT warm start).
"""

from __future__ import annotations

import json
import random
from typing import Any

from datasets import Dataset

import verifiers as vf
from verifiers.errors import UsageError

TOOL_CALL_TAG = "<tool_call>"
"""How the project's chat templates (and vLLM's ``hermes`` parser) open a tool call."""

UNPARSED_CALL = ('Error: your tool call could not be read. Write it as '
                 '<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>.')
"""The user message that answers a ``<tool_call>`` block the server returned as text."""


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    for name, value in (("a", a), ("b", b)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"Error: {name} must be an integer, got {value!r}.")
    return a * b


def final_answer(completion: vf.Messages, parser: vf.Parser) -> str:
    """The last assistant message's text, stripped ("" when it is a tool call or missing)."""
    assistant = [m for m in completion if m.get("role") == "assistant"] if isinstance(completion, list) else []
    if assistant and assistant[-1].get("tool_calls"):
        return ""  # the rollout ended (turn limit) while the model was still calling tools
    return str(parser.parse_answer(completion) or "").strip()


def correct_product(completion: vf.Messages, answer: str, parser: vf.Parser) -> float:
    """1.0 when the final reply is exactly the product."""
    return 1.0 if final_answer(completion, parser) == answer else 0.0


class MultiplyToolEnv(vf.ToolEnv):
    """``ToolEnv`` that also answers a ``<tool_call>`` the server left as text, instead of ending there."""

    @vf.stop
    async def no_tools_called(self, state: vf.State) -> bool:
        if not state["trajectory"] or _unparsed_call(state["trajectory"][-1]["completion"]):
            return False
        return await super().no_tools_called(state)

    async def env_response(self, messages: Any, state: vf.State, **kwargs: Any) -> Any:
        if _unparsed_call(messages):
            state.setdefault("tool_errors", []).append("unparsed tool call")
            return [vf.UserMessage(content=UNPARSED_CALL)]
        return await super().env_response(messages, state, **kwargs)


def _unparsed_call(messages: Any) -> bool:
    """Whether the last message is an assistant's text holding a tool call that was not parsed into one."""
    if not isinstance(messages, list) or not messages:
        return False
    last = messages[-1]
    return (
        last.get("role") == "assistant"
        and not last.get("tool_calls")
        and TOOL_CALL_TAG in str(last.get("content") or "")
    )


def all_problems(min_value: int, max_value: int, count: int, seed: int) -> list[tuple[int, int]]:
    """``count`` distinct ordered pairs of factors in the range, in the seed's order."""
    width = max_value - min_value + 1
    picks = random.Random(f"multiply-tool/{seed}").sample(range(width * width), count)
    return [(min_value + p // width, min_value + p % width) for p in picks]


def build_split(pairs: list[tuple[int, int]]) -> Dataset:
    """Rows with ``a*b`` as ``question`` and the product as ``answer``."""
    return Dataset.from_dict(
        {
            "question": [f"{a}*{b}" for a, b in pairs],
            "answer": [str(a * b) for a, b in pairs],
            "task": ["multiply-tool"] * len(pairs),
        }
    )


def gold_completion(question: str) -> list[dict[str, Any]]:
    """The messages of a correct rollout for ``question`` (``a*b``): one call, the tool's reply, the answer.

    The call's text is what the chat template renders for it, so a model trained on these transcripts
    writes calls that re-render to its own tokens (one training sample per rollout).
    """
    a, b = (int(x) for x in question.split("*"))
    call = {"id": "call_0", "type": "function",
            "function": {"name": "multiply", "arguments": json.dumps({"a": a, "b": b})}}  # fmt: skip
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": str(a * b), "tool_call_id": "call_0"},
        {"role": "assistant", "content": str(a * b)},
    ]


def load_environment(
    num_train_examples: int = 5000,
    num_eval_examples: int = 200,
    min_value: int = 100,
    max_value: int = 999,
    max_turns: int = 3,
    seed: int = 0,
) -> vf.Environment:
    """Build the multiply-tool environment.

    Args:
        num_train_examples: rows in the training split (0 for none).
        num_eval_examples: rows in the evaluation split (0 for none).
        min_value, max_value: the factors' range (three-digit by default).
        max_turns: model turns per rollout at most (a correct rollout takes 2).
        seed: picks and orders the problems; the same seed gives the same rows.
    """
    _check_args(num_train_examples, num_eval_examples, min_value, max_value, max_turns, seed)
    width = max_value - min_value + 1
    if num_train_examples + num_eval_examples > width * width:
        raise UsageError(
            f"asked for {num_train_examples + num_eval_examples} rows but the range has only {width * width} problems"
        )
    pairs = all_problems(min_value, max_value, num_eval_examples + num_train_examples, seed)
    eval_pairs, train_pairs = pairs[:num_eval_examples], pairs[num_eval_examples:]
    parser = vf.Parser()
    return MultiplyToolEnv(
        tools=[multiply],
        max_turns=max_turns,
        dataset=build_split(train_pairs) if train_pairs else None,
        eval_dataset=build_split(eval_pairs) if eval_pairs else None,
        parser=parser,
        rubric=vf.Rubric(funcs=[correct_product], weights=[1.0], parser=parser),
    )


def _check_args(
    num_train: int,
    num_eval: int,
    min_value: int,
    max_value: int,
    max_turns: int,
    seed: int,
) -> None:
    values = {"num_train_examples": num_train, "num_eval_examples": num_eval, "min_value": min_value,
              "max_value": max_value, "max_turns": max_turns, "seed": seed}  # fmt: skip
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise UsageError(f"{name} must be an integer, got {value!r}")
    if num_train < 0 or num_eval < 0:
        raise UsageError("num_train_examples and num_eval_examples must be 0 or more")
    if num_train == 0 and num_eval == 0:
        raise UsageError("num_train_examples and num_eval_examples are both 0; ask for at least one row")
    if min_value < 0 or max_value < min_value:
        raise UsageError(f"need 0 <= min_value <= max_value, got min_value={min_value}, max_value={max_value}")
    if max_turns < 2:
        raise UsageError(f"max_turns must be at least 2 (a call, then the answer), got {max_turns}")
