"""pass@k and the run summary."""

from __future__ import annotations

import pytest

from verifiers.eval.metadata import error_counts, pass_at_k, pass_at_k_table, summarize


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
