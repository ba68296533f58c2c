"""Judging what ``inside.py`` reported: pure functions from a sandbox outcome to (status, summary, report)."""

from __future__ import annotations

import math
from typing import Any

from hub_server.db.checks import ERROR, FAILED, MISMATCH, NEEDS_SANDBOXES, NOT_RESCORABLE, PASSED, RESCORED
from hub_server.worker.sandbox_run import SandboxOutcome

REWARD_TOLERANCE = 1e-6
Verdict = tuple[str, str, dict[str, Any]]


def _base(outcome: SandboxOutcome, sdk_version: str | None = None) -> dict[str, Any]:
    report = outcome.report or {}
    return {"log_tail": outcome.log_tail, "timings": {**outcome.timings, **{k: report[k] for k in
                                                                             ("load_s", "rollouts_s") if k in report}},
            "sdk_version": report.get("sdk_version", sdk_version)}


def _unfinished(outcome: SandboxOutcome, sdk_version: str) -> Verdict | None:
    """The verdict when the program never reported or raised; None when it finished."""
    base = _base(outcome, sdk_version)
    if outcome.problem is not None:
        return (ERROR if outcome.infrastructure else FAILED), outcome.problem, base
    report = outcome.report or {}
    if report.get("stage") in ("forged", "crash"):  # inside.py's supervisor: no report, or not the harness's
        return FAILED, str(report.get("error", "the check program ended without its report")), base
    if report.get("error"):
        stage = report.get("stage", "import")
        where = {"import": "importing the SDK", "load": "load_environment",
                 "rollouts": "running rollouts", "scoring": "scoring"}.get(stage, stage)
        base["traceback"] = report.get("traceback", "")
        return FAILED, f"{where} raised {report['error']}", base
    return None


def _as_reward(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else float("nan")  # "nan", "inf" came as text


def contract_verdict(outcome: SandboxOutcome, declared: tuple[float, float] | None, sdk_version: str) -> Verdict:
    """Passed when rollouts ran, every reward is finite and in range, and every rollout has the same metrics.

    The range is the package's ``[tool.verifiers.check] reward_range``, else the rubric's weight bounds. An
    environment whose rollouts need sandboxes of its own installed and loaded but ran none: not checked.
    """
    unfinished = _unfinished(outcome, sdk_version)
    if unfinished is not None:
        return unfinished
    report = outcome.report or {}
    base = _base(outcome, sdk_version)
    needs = report.get("needs_sandboxes")
    if needs:
        base["needs_sandboxes"] = needs
        return NEEDS_SANDBOXES, (f"not checked: {', '.join(map(str, needs))} runs its rollouts in sandboxes of its "
                                 "own, which cannot start inside the check's sandbox; the wheel installed and "
                                 "load_environment returned it"), base
    rollouts = report.get("rollouts") or []
    bounds = declared or (tuple(report["weight_bounds"]) if report.get("weight_bounds") else None)
    base.update(rollouts=rollouts, reward_range=list(bounds) if bounds else None)
    done = [r for r in rollouts if not r.get("error")]
    if not done:
        first = rollouts[0].get("error") if rollouts else "no rollouts ran"
        return FAILED, f"no rollout finished without an error; first error: {first}", base
    problems = []
    rewards = [_as_reward(r.get("reward")) for r in done]
    bad = [r for r in rewards if not math.isfinite(r)]
    if bad:
        problems.append(f"{len(bad)} of {len(rewards)} rewards are not finite ({bad[0]})")
    elif bounds is not None:
        low, high = bounds
        outside = [r for r in rewards if not low - REWARD_TOLERANCE <= r <= high + REWARD_TOLERANCE]
        if outside:
            problems.append(f"reward {outside[0]} is outside the declared range [{low:g}, {high:g}]")
    names = {tuple(r.get("metrics") or []) for r in done}
    if len(names) > 1:
        problems.append("metric names differ between rollouts: " + " vs ".join(str(list(n)) for n in sorted(names)))
    if problems:
        return FAILED, "; ".join(problems), base
    return PASSED, f"{len(done)} rollouts, rewards finite and in range, metrics {list(next(iter(names)))}", base


def rescore_verdict(outcome: SandboxOutcome, pushed: dict[int, float], sdk_version: str) -> Verdict:
    """Re-scored only when every sampled rollout's reward matches what was pushed."""
    unfinished = _unfinished(outcome, sdk_version)
    if unfinished is not None:
        status, summary, base = unfinished
        return status if status == ERROR else MISMATCH, f"re-scoring failed: {summary}", base
    report = outcome.report or {}
    base = _base(outcome, sdk_version)
    if not report.get("rescorable"):
        return NOT_RESCORABLE, str(report.get("reason", "not re-scorable")), base
    if report.get("dataset_mismatch"):  # the pushed rows are not the environment's own
        return MISMATCH, f"the pushed rollouts are not this version's dataset: {report['dataset_mismatch']}", base
    scores = {int(s["position"]): _as_reward(s["reward"]) for s in report.get("scores") or []}
    compared: list[dict[str, Any]] = [{"position": p, "pushed": pushed[p], "rescored": scores.get(p)}
                                      for p in sorted(pushed)]
    base["compared"] = compared
    wrong = [c for c in compared if c["rescored"] is None or not math.isfinite(c["rescored"])
             or abs(c["rescored"] - c["pushed"]) > REWARD_TOLERANCE]
    if wrong:
        first = wrong[0]
        return MISMATCH, (f"{len(wrong)} of {len(compared)} sampled rewards differ (rollout {first['position']}: "
                          f"pushed {first['pushed']}, re-scored {first['rescored']})"), base
    return RESCORED, f"{len(compared)} sampled rewards match", base
