"""The commitment scheme: what is committed, and what a recomputation accepts."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from trainer_adapter.validate.commitment import Commitment, commit, committed_states, compare


def hidden(states: int = 20, width: int = 64, seed: int = 0) -> torch.Tensor:
    return torch.randn(states, width, generator=torch.Generator().manual_seed(seed))


def test_every_interval_th_state_and_the_last_are_committed() -> None:
    assert committed_states(20, 8) == [0, 8, 16, 19]
    assert committed_states(17, 8) == [0, 8, 16]
    assert committed_states(1, 8) == [0]
    assert committed_states(0, 8) == []


def test_a_commitment_holds_the_largest_magnitude_coordinates() -> None:
    h = hidden()
    c = commit(h, interval=8, k=4)
    assert c.states == [0, 8, 16, 19]
    for state, idx, vals in zip(c.states, c.indices, c.values, strict=True):
        assert set(idx) == set(h[state].abs().topk(4).indices.tolist())
        assert vals == pytest.approx(h[state, idx].tolist())


def test_the_same_states_pass_and_noise_within_tolerance_passes() -> None:
    h = hidden()
    c = commit(h, interval=8, k=4)
    assert compare(c, h, tolerance=1e-6).ok
    jittered = h + 1e-5 * torch.randn(h.shape, generator=torch.Generator().manual_seed(1))
    match = compare(c, jittered, tolerance=1e-4)
    assert match.ok and 0 < match.value_error < 1e-4


def test_other_states_fail_and_say_by_how_much() -> None:
    h = hidden()
    c = commit(h, interval=8, k=4)
    match = compare(c, hidden(seed=2), tolerance=1e-3)
    assert not match.ok and match.value_error > 0.1 and "tolerance" in match.detail


def test_a_changed_value_at_one_committed_coordinate_fails() -> None:
    h = hidden()
    c = commit(h, interval=8, k=4)
    values = [list(v) for v in c.values]
    values[2][1] += 0.01
    forged = c.model_copy(update={"values": values})
    assert not compare(forged, h, tolerance=1e-3).ok


def test_an_index_outside_the_recomputed_top_k_fails_even_with_its_true_value() -> None:
    h = hidden()
    c = commit(h, interval=8, k=4)
    small = int(h[0].abs().argmin())
    indices = [list(i) for i in c.indices]
    values = [list(v) for v in c.values]
    indices[0][3], values[0][3] = small, float(h[0, small])
    forged = c.model_copy(update={"indices": indices, "values": values})
    match = compare(forged, h, tolerance=1e-3)
    assert not match.ok and match.value_error == 0 and match.rank_error > 1e-3


def test_a_commitment_for_a_different_length_fails() -> None:
    c = commit(hidden(states=20), interval=8, k=4)
    match = compare(c, hidden(states=12), tolerance=1.0)
    assert not match.ok and "committed states" in match.detail


def test_an_index_past_the_hidden_size_fails() -> None:
    c = commit(hidden(width=64), interval=8, k=4)
    match = compare(c, hidden(width=32), tolerance=1.0)
    assert not match.ok and "hidden size" in match.detail


@pytest.mark.parametrize(
    "change",
    [
        {"indices": [[1, 2, 3]], "values": [[0.1, 0.2, 0.3, 0.4]]},  # k indices needed
        {"indices": [[1, 1, 2, 3]]},  # distinct
        {"indices": [[-1, 1, 2, 3]]},  # non-negative
        {"values": [[float("nan"), 0.0, 0.0, 0.0]]},
        {"states": [0, 8]},  # one entry per state
        {"k": 0},
        {"interval": 0},
        {"extra": 1},
    ],
)
def test_malformed_commitments_are_refused(change: dict) -> None:
    good = {"interval": 8, "k": 4, "states": [0], "indices": [[0, 1, 2, 3]], "values": [[0.1, 0.2, 0.3, 0.4]]}
    Commitment.model_validate(good)
    with pytest.raises(ValidationError):
        Commitment.model_validate({**good, **change})


def test_commit_refuses_a_k_wider_than_the_state() -> None:
    with pytest.raises(ValueError, match="hidden_size >= k"):
        commit(hidden(width=4), interval=8, k=8)
