"""Advantages: reward minus the group mean, optionally over the group's population std, against hand values."""

from __future__ import annotations

import math

import pytest

from trainer_adapter.orchestrator.advantages import STD_EPSILON, assign_advantages, compute_advantages
from trainer_adapter.orchestrator.orchestrator import OrchestratorConfig
from trainer_adapter.orchestrator.rollouts import Rollout, RolloutGroup


def test_std_normalisation_divides_by_the_population_std() -> None:
    # Rewards [1, 0, 0, 1]: centred ±0.5, population std 0.5 -> ±1 (the 1e-6 aside).
    scale = 0.5 / (0.5 + STD_EPSILON)
    assert compute_advantages([1.0, 0.0, 0.0, 1.0], normalize_std=True) == pytest.approx([scale, -scale, -scale, scale])
    # Rewards [0, 0, 3]: mean 1, centred [-1, -1, 2], population std √(6/3) = √2 (sample std would be √3).
    std = math.sqrt(2.0)
    assert compute_advantages([0.0, 0.0, 3.0], normalize_std=True) == pytest.approx(
        [-1 / (std + STD_EPSILON), -1 / (std + STD_EPSILON), 2 / (std + STD_EPSILON)], rel=1e-12)


def test_std_normalisation_makes_the_scale_of_rewards_irrelevant() -> None:
    small = compute_advantages([0.1, 0.2, 0.6], normalize_std=True)
    large = compute_advantages([10.0, 20.0, 60.0], normalize_std=True)
    assert small == pytest.approx(large, rel=1e-4)  # only the epsilon tells them apart
    assert sum(a * a for a in large) / 3 == pytest.approx(1.0, rel=1e-6)


@pytest.mark.parametrize("normalize_std", [False, True])
def test_equal_rewards_give_exactly_zero_and_small_groups_are_defined(normalize_std: bool) -> None:
    # 0.1 * 3 / 3 is not 0.1 in floating point: equal rewards must still give exact zeros.
    assert compute_advantages([0.1, 0.1, 0.1], normalize_std) == [0.0, 0.0, 0.0]
    assert compute_advantages([3.0], normalize_std) == [0.0]
    assert compute_advantages([], normalize_std) == []
    # Rewards that barely differ: the epsilon keeps the advantages bounded (|A| < 1 here).
    tiny = compute_advantages([0.0, 1e-9], normalize_std)
    assert all(abs(a) < 1.0 for a in tiny) and tiny[0] < 0 < tiny[1]


def test_default_is_mean_centred_only() -> None:
    assert compute_advantages([0.2, 0.5, 0.8]) == pytest.approx([-0.3, 0.0, 0.3])
    assert not OrchestratorConfig().advantage_std_normalize
    assert OrchestratorConfig.model_fields["advantage_std_normalize"].description


def test_assign_advantages_passes_the_flag() -> None:
    group = RolloutGroup(0, [Rollout(1.0, []), Rollout(0.0, [])], policy_version=0)
    assert [r.advantage for r in assign_advantages(group).rollouts] == [0.5, -0.5]
    scale = 0.5 / (0.5 + STD_EPSILON)
    normalised = assign_advantages(group, normalize_std=True)
    assert [r.advantage for r in normalised.rollouts] == pytest.approx([scale, -scale])
