"""Run folders written the way ``vf-eval`` writes them: ``state_to_output`` records through ``ResultsWriter``,
and ``metadata.json`` with ``summarize``'s scores."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from verifiers.eval.metadata import summarize
from verifiers.eval.outputs import state_to_output
from verifiers.eval.results import ResultsWriter
from verifiers.state import State

RunWriter = Callable[..., Path]


def tool_rollout(example_id: int, rollout_index: int, reward: float, answer_text: str,
                 error: str | None = None) -> dict[str, Any]:
    """A finished ToolEnv-style rollout: a system prompt, a tool call, its result, and the answer."""
    state = State(
        example_id=example_id, task="default", answer="olleh",
        prompt=[{"role": "system", "content": "Reverse the word."}, {"role": "user", "content": f"word{example_id}"}],
        completion=[
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_0", "type": "function", "function": {"name": "reverse_word", "arguments": '{"w": "x"}'}}]},
            {"role": "tool", "tool_call_id": "call_0", "content": "tool said [red]hi[/red]"},
            {"role": "assistant", "content": answer_text},
        ],
        reward=reward, metrics={"exact": reward, "length": 0.25}, error=error, trajectory=[{}, {}],
    )
    return state_to_output(state, rollout_index)


@pytest.fixture
def make_rollout() -> Callable[..., dict[str, Any]]:
    """``make_rollout(example_id, rollout_index, reward, answer_text, error=None)`` → a results.jsonl record."""
    return tool_rollout


@pytest.fixture
def write_run(tmp_path: Path) -> RunWriter:
    """``write_run(outputs, env="e", model="m", rewards=[...], errors={i: text}, answers={i: text})`` → run dir."""

    def write(outputs: list[dict[str, Any]] | None = None, *, env: str = "toy", model: str = "scripted",
              run_id: str = "run00001", root: Path | None = None, date: str = "2026-01-02T03:04:05+00:00") -> Path:
        outputs = outputs if outputs is not None else [tool_rollout(i, 0, float(i % 2), f"answer {i}")
                                                       for i in range(4)]
        run_dir = (root or tmp_path / "outputs") / "evals" / f"{env}--{model}" / run_id
        with ResultsWriter(run_dir / "results.jsonl") as writer:
            writer.append_group(outputs)
        metadata = {"env_id": env, "model": model, "num_examples": len({o["example_id"] for o in outputs}),
                    "rollouts_per_example": 1, "date": date, "status": "complete", **summarize(outputs, 0.5)}
        (run_dir / "metadata.json").write_text(json.dumps(metadata, indent=2))
        return run_dir

    return write
