"""Judging a check's report: every way a report can fail, and what passes."""

from __future__ import annotations

from typing import Any

from hub_server.db.checks import ERROR, FAILED, MISMATCH, NEEDS_SANDBOXES, NOT_RESCORABLE, PASSED, RESCORED
from hub_server.worker.loop import declared_range
from hub_server.worker.sandbox_run import SandboxOutcome
from hub_server.worker.verdicts import contract_verdict, rescore_verdict


def _contract(*rollouts: dict[str, Any], bounds: list[float] | None = None) -> SandboxOutcome:
    report = {"stage": "done", "sdk_version": "0.3.0", "weight_bounds": bounds, "rollouts": list(rollouts)}
    return SandboxOutcome(report, "log")


def _rollout(reward: Any = 1.0, metrics: tuple[str, ...] = ("exact",), error: str | None = None) -> dict[str, Any]:
    return {"reward": reward, "metrics": list(metrics), "error": error}


def test_finite_rewards_in_range_with_stable_metrics_pass() -> None:
    status, summary, report = contract_verdict(_contract(_rollout(), _rollout(0.0), bounds=[0, 1]), None, "x")
    assert status == PASSED and report["reward_range"] == [0, 1] and report["sdk_version"] == "0.3.0"


def test_non_finite_out_of_range_and_unstable_metrics_fail() -> None:
    assert contract_verdict(_contract(_rollout("nan"), _rollout()), None, "x")[:2] == (
        FAILED, "1 of 2 rewards are not finite (nan)")
    outside = contract_verdict(_contract(_rollout(3.0), bounds=[0, 1]), None, "x")
    assert outside[0] == FAILED and "outside the declared range [0, 1]" in outside[1]
    # a declared [tool.verifiers.check] reward_range wins over the rubric's weights
    assert contract_verdict(_contract(_rollout(3.0), bounds=[0, 1]), (0.0, 5.0), "x")[0] == PASSED
    assert "metric names differ" in contract_verdict(_contract(_rollout(), _rollout(metrics=("b",))), None, "x")[1]
    assert "no rollout finished" in contract_verdict(_contract(_rollout(error="ModelError: x")), None, "x")[1]


def test_a_raising_environment_and_an_unfinished_run_fail_and_a_broken_sandbox_is_an_error() -> None:
    raised = SandboxOutcome({"stage": "load", "error": "RuntimeError: no data", "traceback": "tb"}, "log")
    assert contract_verdict(raised, None, "x")[:2] == (FAILED, "load_environment raised RuntimeError: no data")
    late = SandboxOutcome(None, "", problem="timeout: late")
    assert contract_verdict(late, None, "x")[:2] == (FAILED, "timeout: late")
    broken = SandboxOutcome(None, "", problem="sandbox: gone", infrastructure=True)
    assert contract_verdict(broken, None, "x")[0] == ERROR


def test_a_forged_report_and_a_crash_fail_with_the_supervisors_words() -> None:
    forged = SandboxOutcome({"stage": "forged", "error": "a forged report: it claims 3 rollouts, but the model was "
                                                          "asked 0 times", "rollouts": [{"reward": 1.0}] * 3}, "")
    assert contract_verdict(forged, None, "x")[:2] == (FAILED, "a forged report: it claims 3 rollouts, but the "
                                                               "model was asked 0 times")
    crash = SandboxOutcome({"stage": "crash", "error": "crash: the package's process ended (exit 3)"}, "")
    assert contract_verdict(crash, None, "x")[:2] == (FAILED, "crash: the package's process ended (exit 3)")


def test_rescoring_matches_only_when_every_sampled_reward_does() -> None:
    scored = SandboxOutcome({"rescorable": True, "scores": [{"position": 0, "reward": 1.0},
                                                            {"position": 1, "reward": 0.0}]}, "")
    assert rescore_verdict(scored, {0: 1.0, 1: 0.0}, "x")[0] == RESCORED
    status, summary, _ = rescore_verdict(scored, {0: 1.0, 1: 1.0}, "x")
    assert status == MISMATCH and summary.startswith("1 of 2 sampled rewards differ (rollout 1")
    assert rescore_verdict(scored, {0: 1.0, 7: 1.0}, "x")[0] == MISMATCH  # a rollout it never scored
    forged = SandboxOutcome({"rescorable": True, "dataset_mismatch": "rollout 0 (example 1): its answer is not "
                                                                      "the dataset's"}, "")
    status, summary, _ = rescore_verdict(forged, {0: 1.0}, "x")
    assert status == MISMATCH and summary.endswith("not this version's dataset: rollout 0 (example 1): its answer "
                                                   "is not the dataset's")
    judge = SandboxOutcome({"rescorable": False, "reason": "the rubric asks a model (JudgeRubric)"}, "")
    assert rescore_verdict(judge, {0: 1.0}, "x")[:2] == (NOT_RESCORABLE, "the rubric asks a model (JudgeRubric)")


def test_a_declared_range_is_taken_only_when_sound() -> None:
    assert declared_range({"tool": {"verifiers": {"check": {"reward_range": [0, 2]}}}}) == (0.0, 2.0)
    for bad in ([2, 0], [0], ["a", 1], "0-1"):
        assert declared_range({"tool": {"verifiers": {"check": {"reward_range": bad}}}}) is None
    assert declared_range(None) is None and declared_range({"tool": {"verifiers": {"check": 3}}}) is None


def test_an_environment_needing_sandboxes_is_not_checked_rather_than_failed() -> None:
    loaded = SandboxOutcome({"stage": "done", "sdk_version": "0.3.0", "weight_bounds": [0, 1],
                             "needs_sandboxes": ["HumanEvalEnv"]}, "log")
    status, summary, report = contract_verdict(loaded, None, "x")
    assert status == NEEDS_SANDBOXES and summary.startswith("not checked: HumanEvalEnv runs its rollouts in sandboxes")
    assert report["needs_sandboxes"] == ["HumanEvalEnv"]
    # the mark only counts once the environment loaded: one that raised while loading still fails
    raised = SandboxOutcome({"stage": "load", "error": "ImportError: x", "needs_sandboxes": ["CodeEnv"]}, "log")
    assert contract_verdict(raised, None, "x")[0] == FAILED
