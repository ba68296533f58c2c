"""First-fit-decreasing packing, micro-batch contents, and dealing to ranks."""

from __future__ import annotations

import pytest

from trainer_adapter.orchestrator.packing import (
    MicroBatch,
    Sample,
    distribute,
    pack,
    packing_efficiency,
    samples_from_groups,
)
from trainer_adapter.orchestrator.rollouts import Rollout, RolloutGroup
from verifiers.tokens import TrainingSample


def _sample(length: int, tag: int = 0, version: int = 0) -> Sample:
    return Sample([tag] * length, [True] * length, [-0.5] * length, advantage=float(tag), policy_version=version)


def test_first_fit_decreasing_bins() -> None:
    # Sorted: 6 5 4 3 2 -> [6,4] [5,3,2] with seq_len 10 (first fit, not best fit).
    samples = [_sample(n, tag=n) for n in (3, 6, 2, 5, 4)]
    bins = pack(samples, seq_len=10)
    assert [b.sample_lengths for b in bins] == [[6, 4], [5, 3, 2]]
    assert packing_efficiency(bins, 10) == pytest.approx(20 / 20)


def test_micro_batch_lays_samples_end_to_end() -> None:
    a = Sample([1, 2, 3], [False, True, True], [0.0, -0.1, -0.2], advantage=0.5, policy_version=3)
    b = Sample([4, 5], [False, True], [0.0, -0.3], advantage=-1.0, policy_version=4)
    (mb,) = pack([b, a], seq_len=8, temperature=0.7)
    assert mb.input_ids == [1, 2, 3, 4, 5]
    assert mb.position_ids == [0, 1, 2, 0, 1]
    assert mb.loss_mask == [False, True, True, False, True]
    assert mb.advantages == [0.5, 0.5, 0.5, -1.0, -1.0]
    assert mb.inference_logprobs == [0.0, -0.1, -0.2, 0.0, -0.3]
    assert mb.sample_lengths == [3, 2] and mb.policy_versions == [3, 4]
    assert mb.temperature == 0.7 and mb.num_trainable_tokens == 3


def test_every_token_is_packed_exactly_once_and_no_bin_overflows() -> None:
    lengths = [17, 3, 64, 1, 33, 32, 31, 8, 8, 60, 5]
    bins = pack([_sample(n, tag=i) for i, n in enumerate(lengths)], seq_len=64)
    assert all(len(b) <= 64 for b in bins)
    assert sorted(n for b in bins for n in b.sample_lengths) == sorted(lengths)
    assert len(bins) == 5  # 262 tokens need at least 5 bins of 64


def test_overlong_sample_is_an_error_not_a_cut() -> None:
    with pytest.raises(ValueError, match="sample 1 has 11 tokens"):
        pack([_sample(3), _sample(11)], seq_len=10)


def test_samples_from_groups_carry_advantage_version_and_masks() -> None:
    ts = TrainingSample([7, 8], [0, 0], [9, 10, 11], [1, 0, 1], [-0.1, 0.0, -0.3])
    group = RolloutGroup(4, [Rollout(1.0, [ts], advantage=0.25)], policy_version=2)
    (s,) = samples_from_groups([group])
    assert s.token_ids == [7, 8, 9, 10, 11]
    assert s.loss_mask == [False, False, True, False, True]
    assert s.inference_logprobs == [0.0, 0.0, -0.1, 0.0, -0.3]
    assert (s.advantage, s.policy_version) == (0.25, 2)


def test_distribute_pads_ranks_with_untrainable_copies() -> None:
    bins = [MicroBatch(input_ids=[i], position_ids=[0], loss_mask=[True], advantages=[1.0],
                       inference_logprobs=[0.0], sample_lengths=[1], policy_versions=[0]) for i in range(3)]
    ranks = distribute(bins, 2)
    assert [len(r) for r in ranks] == [2, 2]
    assert [m.input_ids for m in ranks[0]] == [[0], [2]]
    pad = ranks[1][1]
    assert pad.input_ids == [0] and pad.loss_mask == [False] and pad.advantages == [0.0]
    assert bins[0].loss_mask == [True]  # the original is untouched
    assert distribute(bins, 1) == [bins]


@pytest.mark.parametrize(("call", "message"), [
    (lambda: pack([], seq_len=0), "seq_len must be positive"),
    (lambda: distribute([], 2), "no micro-batches"),
    (lambda: distribute([MicroBatch()], 0), "num_ranks must be positive"),
    (lambda: Sample([1], [True, False], [0.0], 0.0), "same length"),
])
def test_bad_inputs_are_rejected(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def _replies(prompt: list[int], lengths: list[int], tag: int) -> list[Sample]:
    return [Sample(prompt + [tag] * n, [False] * len(prompt) + [True] * n, [0.0] * (len(prompt) + n), 0.0,
                   prompt_len=len(prompt)) for n in lengths]


def test_a_groups_samples_sit_side_by_side_and_share_their_prompt() -> None:
    a, b = _replies([1, 2, 3, 4], [2, 3, 1], tag=7), _replies([5, 6, 7], [1, 1], tag=8)
    lone = Sample([9] * 6, [True] * 6, [0.0] * 6, 0.0)
    (mb,) = pack([a[0], b[0], lone, a[1], b[1], a[2]], seq_len=64)
    # units: a's prompt 4 + replies 2+3+1 = 10 positions, lone 6, b's 3 + 1 + 1 = 5
    assert mb.sample_lengths == [6, 7, 5, 6, 4, 4]
    assert mb.shared_prefix == [0, 4, 4, 0, 0, 3]
    assert mb.positions == 10 + 6 + 5 and len(mb) == 32
    assert packing_efficiency([mb], 64) == pytest.approx(21 / 64)


def test_a_group_larger_than_a_bin_is_split_into_runs_that_fit() -> None:
    samples = _replies([1] * 6, [2] * 5, tag=3)  # 6 + 5 × 2 = 16 positions
    bins = pack(samples, seq_len=10)
    assert [b.shared_prefix for b in bins] == [[0, 6], [0, 6], [0]]
    assert [b.positions for b in bins] == [10, 10, 8]
    assert sum(len(b.sample_lengths) for b in bins) == 5


def test_a_sample_that_is_all_prompt_keeps_its_group_unshared() -> None:
    samples = _replies([1, 2, 3], [2, 0], tag=4)
    (mb,) = pack(samples, seq_len=64)
    assert mb.shared_prefix == [0, 0] and mb.positions == len(mb) == 8


def test_samples_from_groups_name_their_prompt_length() -> None:
    ts = TrainingSample([7, 8], [0, 0], [9], [1], [-0.1])
    (s,) = samples_from_groups([RolloutGroup(0, [Rollout(1.0, [ts])], policy_version=0)])
    assert s.prompt_len == 2
    with pytest.raises(ValueError, match="prompt_len 3 is outside"):
        Sample([1, 2], [True, True], [0.0, 0.0], 0.0, prompt_len=3)
