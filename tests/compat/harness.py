"""Run a compat environment on an original ``verifiers`` and on this SDK, and diff.

Each evaluation runs ``runner.py`` in a subprocess of the interpreter under test,
so the original release and this SDK never share a process or an import path.
Both talk to the same scripted OpenAI-compatible server, whose replies are a pure
function of the request, so equal SDK behaviour means equal scores.

Example::

    with ScriptedServer(policy="echo", port=0).running() as base_url:
        expected = run_eval(original_python("tuple"), "compat_xml_math", "tuple", base_url, tmp)
        got = run_eval(OUR_PYTHON, "compat_xml_math", "tuple", base_url, tmp, sdk_root=REPO_ROOT)
    assert not diff_runs(expected, got)
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Era = Literal["tuple", "state"]

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).resolve().parent / "runner.py"
OUR_PYTHON = REPO_ROOT / ".venv" / "bin" / "python"

# Which original release speaks each era, and where scripts/original_venv.sh puts it.
ORIGINALS: dict[Era, tuple[str, Path]] = {
    "tuple": ("0.1.5", REPO_ROOT / ".venv-vf015"),
    "state": ("0.3.0", REPO_ROOT / ".venv-vf030"),
}


class CompatRunError(RuntimeError):
    """The evaluation subprocess failed; the message carries its stderr."""


@dataclass(frozen=True)
class EvalRun:
    """Scores of one evaluation, rollouts in the order the SDK returned them."""

    rewards: list[float]
    metrics: dict[str, list[float | None]]
    stop_conditions: list[str | None] | None = None
    completions: list[Any] = field(default_factory=list)
    verifiers_file: str = ""
    api_notes: list[str] = field(default_factory=list)
    """Ways the SDK's public API deviated from the era's while running (see runner.py)."""


def spec_tools_policy(request: Any) -> Any:
    """Scripted-server policy for the tool envs: the user message is a JSON object
    ``{tool_name: arguments}``; the first turn calls all those tools at once, the next
    answers ``<answer>r1|r2...</answer>`` with the tool results in call order.
    """
    from verifiers.testing import Reply
    from verifiers.testing.policies import content_text

    tool_results = [
        content_text(m.get("content"))
        for m in request.messages[_last_user_index(request.messages) + 1 :]
        if m.get("role") == "tool"
    ]
    if tool_results:
        return Reply("<answer>" + "|".join(tool_results) + "</answer>")
    wanted = json.loads(request.last_user_text)
    if not wanted:
        return Reply("<answer></answer>")
    calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(wanted.items())
    ]
    return Reply("", tool_calls=calls)


def _last_user_index(messages: list[dict[str, Any]]) -> int:
    return max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)


def original_python(era: Era) -> Path:
    """Interpreter of the original release for ``era`` (may not exist yet)."""
    return ORIGINALS[era][1] / "bin" / "python"


def run_eval(
    python: Path,
    env_module: str,
    era: Era,
    base_url: str,
    workdir: Path,
    *,
    sdk_root: Path | None = None,
    env_args: dict[str, Any] | None = None,
    num_examples: int = -1,
    rollouts_per_example: int = 1,
    timeout: float = 240.0,
) -> EvalRun:
    """Evaluate ``env_module`` (from tests/compat/envs) with ``python`` in a subprocess.

    ``sdk_root`` is put on PYTHONPATH (this SDK, run from its source tree); without it
    the interpreter's own installed ``verifiers`` is used (an original venv).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    out_path = workdir / f"{env_module}-{era}-{'ours' if sdk_root else 'original'}.json"
    args = dict(env_args or {})
    args["_num_examples"] = num_examples
    args["_rollouts_per_example"] = rollouts_per_example
    command = [str(python), str(RUNNER), env_module, era, base_url, str(out_path), json.dumps(args)]
    proc = subprocess.run(
        command,
        cwd=workdir,  # never the repo root: its ./verifiers must not shadow an original
        env=_subprocess_env(base_url, sdk_root),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise CompatRunError(
            f"{python} runner.py {env_module} ({era} era) exited {proc.returncode}:\n{proc.stderr[-6000:]}"
        )
    data = json.loads(out_path.read_text())
    return EvalRun(
        rewards=data["rewards"],
        metrics=data["metrics"],
        stop_conditions=data.get("stop_conditions"),
        completions=data.get("completions", []),
        verifiers_file=data["verifiers_file"],
        api_notes=data.get("api_notes", []),
    )


def _subprocess_env(base_url: str, sdk_root: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if sdk_root is not None:
        env["PYTHONPATH"] = str(sdk_root)
    env["COMPAT_JUDGE_BASE_URL"] = base_url
    env["OPENAI_API_KEY"] = "compat-test"
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env["TQDM_DISABLE"] = "1"
    return env


# Known, documented differences (docs/compat.md): where the eras collide the State era wins, so
# `evaluate` is a coroutine; and every multi-turn env reports 0.3.0's weight-0 monitor metrics
# (`num_turns`, tool-call counts), which 0.1.x did not have. Neither changes a reward.
KNOWN_API_NOTES = {"evaluate() returned an awaitable; verifiers 0.1.x returns the results"}


def is_monitor_metric(name: str) -> bool:
    return name in ("num_turns", "total_tool_calls") or name.endswith("_calls")


def diff_runs(expected: EvalRun, got: EvalRun, tol: float = 1e-9, allow_monitor_metrics: bool = False) -> list[str]:
    """Human-readable differences between two runs (empty when they agree).

    Scores are compared to ``tol`` so that float summation order alone never counts
    as a difference; a metric missing on one side, or ``None`` vs a number, does.
    ``allow_monitor_metrics`` accepts the monitor metrics ours adds over 0.1.x.
    """
    problems = [f"API: {note}" for note in got.api_notes
                if note not in expected.api_notes and note not in KNOWN_API_NOTES]
    if len(expected.rewards) != len(got.rewards):
        return problems + [f"rollout count: expected {len(expected.rewards)}, got {len(got.rewards)}"]
    problems += _diff_series("reward", expected.rewards, got.rewards, tol)
    for name in sorted(set(expected.metrics) - set(got.metrics)):
        problems.append(f"metric {name!r} missing (expected {expected.metrics[name]})")
    for name in sorted(set(got.metrics) - set(expected.metrics)):
        if allow_monitor_metrics and is_monitor_metric(name):
            continue
        problems.append(f"metric {name!r} unexpected (got {got.metrics[name]})")
    for name in sorted(set(expected.metrics) & set(got.metrics)):
        problems += _diff_series(f"metric {name!r}", expected.metrics[name], got.metrics[name], tol)
    if expected.stop_conditions is not None and expected.stop_conditions != got.stop_conditions:
        problems.append(f"stop_condition: expected {expected.stop_conditions}, got {got.stop_conditions}")
    return problems


def _diff_series(label: str, expected: list[float | None], got: list[float | None], tol: float) -> list[str]:
    if len(expected) != len(got):
        return [f"{label}: expected {len(expected)} values, got {len(got)}"]
    return [
        f"{label} rollout {i}: expected {e!r}, got {g!r}"
        for i, (e, g) in enumerate(zip(expected, got, strict=True))
        if not _same(e, g, tol)
    ]


def _same(a: float | None, b: float | None, tol: float) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)


def describe_rollout(run: EvalRun, index: int) -> str:
    """The completion of one rollout, for failure messages."""
    if index >= len(run.completions):
        return "(no completion recorded)"
    return json.dumps(run.completions[index], indent=1)[:2000]
