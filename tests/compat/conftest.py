"""Fixture for the compatibility suite: score one env on an original release and on ours."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from harness import (
    ORIGINALS,
    OUR_PYTHON,
    REPO_ROOT,
    Era,
    EvalRun,
    describe_rollout,
    diff_runs,
    original_python,
    run_eval,
)


@pytest.fixture
def compare_with_original(serve: Callable[..., str], tmp_path: Path) -> Callable[..., tuple[EvalRun, EvalRun]]:
    """``compare(env_module, era, policy, check=None, **run_eval_kwargs)``: fails listing every difference.

    ``check`` asserts on the original's run first, so that a scenario which stopped
    exercising its feature fails even when both SDKs agree. Skips when the original
    release's venv is missing (``scripts/original_venv.sh`` makes it).
    """

    def compare(
        env_module: str,
        era: Era,
        policy: Any,
        check: Callable[[EvalRun], None] | None = None,
        **kwargs: Any,
    ) -> tuple[EvalRun, EvalRun]:
        version, venv = ORIGINALS[era]
        if not original_python(era).exists():
            pytest.skip(
                f"original verifiers {version} venv missing at {venv}; "
                f"create it with: bash scripts/original_venv.sh {version} {venv}"
            )
        base_url = serve(policy)
        expected = run_eval(original_python(era), env_module, era, base_url, tmp_path, **kwargs)
        if check is not None:
            check(expected)
        got = run_eval(OUR_PYTHON, env_module, era, base_url, tmp_path, sdk_root=REPO_ROOT, **kwargs)
        assert Path(expected.verifiers_file).is_relative_to(venv), expected.verifiers_file
        assert Path(got.verifiers_file).is_relative_to(REPO_ROOT / "verifiers"), got.verifiers_file
        problems = diff_runs(expected, got, allow_monitor_metrics=version.startswith("0.1"))
        if problems:
            pytest.fail(_failure_report(env_module, version, expected, got, problems), pytrace=False)
        return expected, got

    return compare


def _failure_report(env_module: str, version: str, expected: EvalRun, got: EvalRun, problems: list[str]) -> str:
    first = _first_differing_rollout(problems)
    lines = [f"{env_module}: this SDK scores differently from verifiers {version}:"]
    lines += [f"  - {p}" for p in problems]
    lines.append(f"expected rewards {expected.rewards}")
    lines.append(f"got      rewards {got.rewards}")
    if first is not None:
        lines.append(f"rollout {first} completion on verifiers {version}:\n{describe_rollout(expected, first)}")
        lines.append(f"rollout {first} completion on this SDK:\n{describe_rollout(got, first)}")
    return "\n".join(lines)


def _first_differing_rollout(problems: list[str]) -> int | None:
    for problem in problems:
        _, found, rest = problem.partition(" rollout ")
        if found:
            return int(rest.split(":")[0])
    return None
