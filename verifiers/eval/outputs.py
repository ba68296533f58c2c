"""A finished state → the JSON-safe record saved in ``results.jsonl``."""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

from verifiers.messages import to_plain
from verifiers.state import State

logger = logging.getLogger("verifiers.eval")

# The record's own keys; a state column may not take one of these names.
OUTPUT_KEYS = frozenset({
    "example_id", "rollout_index", "task", "prompt", "completion", "answer", "info", "reward", "metrics",
    "advantage", "timing", "is_completed", "is_truncated", "stop_condition", "error", "num_turns",
    "total_completion_tokens", "scoring_errors", "tool_errors",
})


def _json_safe(value: Any) -> Any:
    """Plain data (SDK and OpenAI objects converted); the writer stringifies anything else."""
    return to_plain(value)


@functools.cache
def _warn_not_json(column: str, type_name: str) -> None:
    # cached: one warning per column and type, not one per rollout
    logger.warning("state column %r holds a value of type %s, which is not JSON; saving its repr", column, type_name)


def _state_column(state: State, column: str) -> Any:
    """``state[column]`` as JSON-safe data (None when missing), else its repr, with a warning once."""
    value = _json_safe(state.get(column))
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        _warn_not_json(column, type(value).__name__)
        return repr(value)
    return value


def _error_text(error: Any) -> str | None:
    if error is None:
        return None
    if isinstance(error, BaseException):
        return f"{type(error).__name__}: {error}"
    return str(error)


def state_to_output(state: State, rollout_index: int = 0, state_columns: list[str] | None = None) -> dict[str, Any]:
    """The record of one rollout: inputs, completion, scores, timing, how it ended."""
    info = {k: v for k, v in (state.get("info") or {}).items() if k != "oai_tools"}
    output: dict[str, Any] = {
        "example_id": state.get("example_id", 0),
        "rollout_index": rollout_index,
        "task": state.get("task", "default"),
        "prompt": _json_safe(state.get("prompt")),
        "completion": _json_safe(state.get("completion")),
        "answer": state.get("answer", ""),
        "info": _json_safe(info),
        "reward": float(state["reward"]) if state.get("reward") is not None else 0.0,
        "metrics": {k: float(v) for k, v in (state.get("metrics") or {}).items()},
        "advantage": state.get("advantage"),
        "timing": dict(state.get("timing") or {}),
        "is_completed": bool(state.get("is_completed", True)),
        "is_truncated": bool(state.get("is_truncated", False)),
        "stop_condition": state.get("stop_condition"),
        "error": _error_text(state.get("error")),
        "num_turns": len(state.get("trajectory") or []),
        "total_completion_tokens": state.get("total_completion_tokens", 0),
        "scoring_errors": dict(state.get("scoring_errors") or {}),
        "tool_errors": len(state.get("tool_errors") or []),
    }
    for column in state_columns or []:
        output[column] = _state_column(state, column)
    return output


__all__ = ["OUTPUT_KEYS", "state_to_output"]
