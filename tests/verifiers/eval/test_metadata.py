"""pass@k and the run summary."""

from __future__ import annotations

import pytest

from verifiers.eval.metadata import error_counts, pass_at_k, pass_at_k_table, rollout_failures, summarize


def test_pass_at_k_values() -> None:
    assert pass_at_k(4, 0, 1) == 0.0
    assert pass_at_k(4, 4, 1) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2)
    assert pass_at_k(4, 3, 2) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_table_and_summary() -> None:
    outputs = [
        {"example_id": 0, "task": "t", "reward": r, "metrics": {"m": r}, "error": None} for r in (1.0, 0.0, 0.0, 0.0)
    ] + [
        {"example_id": 1, "task": "t", "reward": r, "metrics": {"m": r}, "error": "ModelError: x",
         "scoring_errors": {"f": "ZeroDivisionError: x"}} for r in (1.0, 1.0, 1.0, 1.0)
    ]
    assert pass_at_k_table(outputs, 0.5) == {"1": pytest.approx(0.625), "2": pytest.approx(0.75), "4": 1.0}
    summary = summarize(outputs, 0.5)
    # the four errored rollouts are masked: counted, not averaged
    assert summary["avg_reward"] == pytest.approx(0.25)
    assert summary["avg_metrics"] == {"m": pytest.approx(0.25)}
    assert (summary["num_scored"], summary["num_masked"], summary["avg_error"]) == (4, 4, 0.5)
    assert summary["pass_at_k"] == {"1": pytest.approx(0.25), "2": pytest.approx(0.5), "4": 1.0}
    assert error_counts(outputs) == {"reward function: f": 4, "rollout: ModelError": 4}


def test_package_info_names_the_environment_distribution() -> None:
    from verifiers.eval.metadata import package_info

    pytest.importorskip("reverse_text")
    info = package_info("reverse_text")
    assert info["distribution"] == "reverse-text" and info["version"] == "0.1.0"
    assert package_info("no_such_module_xyz")["distribution"] is None


def test_rollout_failures_count_and_first_error() -> None:
    ok = {"example_id": 0, "reward": 1.0, "error": None}
    first = {"example_id": 1, "reward": 0.0, "error": "ModelError: model API failed: Connection error.\nmore"}
    second = {"example_id": 2, "reward": 0.0, "error": "TimeoutError: slow"}
    assert rollout_failures([ok, ok]) is None
    assert rollout_failures([ok, first, second]) == (
        "2 of 3 rollouts failed; first error: ModelError: model API failed: Connection error.")
    assert rollout_failures([second, first]) == "all 2 rollouts failed; first error: TimeoutError: slow"
    long = {"example_id": 0, "error": "E: " + "x" * 1000}
    assert rollout_failures([long]).endswith("x…") and len(rollout_failures([long])) < 400  # type: ignore[union-attr]
