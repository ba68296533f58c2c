"""Relay choice: proportional to success rate x bandwidth, with exploration, recovering after failures."""

from __future__ import annotations

from collections import Counter

import pytest

from trainer_adapter.broadcast.relay_choice import RelayChoice

RELAYS = ["http://a/", "http://b/", "http://c/"]


def picks(choice: RelayChoice, n: int = 6000, exclude: tuple[str, ...] = ()) -> Counter[str]:
    return Counter(choice.pick(exclude) for _ in range(n))


def test_picks_are_in_proportion_to_success_times_bandwidth() -> None:
    choice = RelayChoice(RELAYS, alpha=1.0, explore=0.0, seed=1)
    for relay, rate in zip(RELAYS, (1e6, 2e6, 3e6), strict=True):
        choice.record_success(relay, int(rate), 1.0)
    counts = picks(choice)
    for relay, share in zip(RELAYS, (1 / 6, 2 / 6, 3 / 6), strict=True):
        assert counts[relay] / 6000 == pytest.approx(share, abs=0.03)


def test_a_failing_relay_loses_its_share_and_exploration_keeps_measuring_it() -> None:
    choice = RelayChoice(RELAYS, alpha=0.5, explore=0.0, seed=2)
    for relay in RELAYS:
        choice.record_success(relay, 10**6, 1.0)
    for _ in range(10):
        choice.record_failure("http://a/")
    assert choice.weight("http://a/") < 1e-3 * choice.weight("http://b/")
    assert picks(choice)["http://a/"] < 30
    exploring = RelayChoice(RELAYS, alpha=0.5, explore=0.3, seed=2)
    exploring.scores = choice.scores
    assert picks(exploring)["http://a/"] / 6000 == pytest.approx(0.1, abs=0.02)  # 0.3 explore / 3 relays
    for _ in range(10):
        choice.record_success("http://a/", 10**6, 1.0)
    assert choice.weight("http://a/") == pytest.approx(choice.weight("http://b/"), rel=1e-3)


def test_an_unmeasured_relay_counts_as_the_best_one_so_it_gets_tried() -> None:
    choice = RelayChoice(RELAYS, alpha=1.0, explore=0.0, seed=3)
    choice.record_success("http://a/", 5 * 10**6, 1.0)
    choice.record_success("http://b/", 10**6, 1.0)
    assert choice.weight("http://c/") == choice.weight("http://a/") == 5e6


def test_bandwidth_is_a_moving_average_and_excluded_relays_are_not_picked() -> None:
    choice = RelayChoice(RELAYS, alpha=0.25, explore=0.0, seed=4)
    choice.record_success("http://a/", 100, 1.0)
    choice.record_success("http://a/", 500, 1.0)
    assert choice.scores["http://a/"].bandwidth == pytest.approx(200.0)
    assert set(picks(choice, 500, exclude=("http://a/", "http://b/"))) == {"http://c/"}
    assert set(picks(choice, 500, exclude=tuple(RELAYS))) == set(RELAYS)  # none left: any will do


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one relay"):
        RelayChoice([])
    with pytest.raises(ValueError, match="alpha must be in"):
        RelayChoice(RELAYS, alpha=0.0)
    with pytest.raises(ValueError, match="explore in"):
        RelayChoice(RELAYS, explore=1.5)
