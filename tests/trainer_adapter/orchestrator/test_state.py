"""The orchestrator's saved state: a restored orchestrator asks the same problems and keeps the same pools.

Against the scripted server, with a stand-in trainer that publishes empty weight folders (as in
test_orchestrator.py). The policy depends on the prompt only, so two runs see the same replies.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest

import verifiers as vf
from trainer_adapter.errors import CheckpointError
from trainer_adapter.orchestrator.buffer import BufferConfig
from trainer_adapter.orchestrator.orchestrator import Orchestrator, OrchestratorConfig
from trainer_adapter.orchestrator.rollouts import Rollout, RolloutGroup
from trainer_adapter.orchestrator.state import (
    OrchestratorState,
    group_from_dict,
    group_to_dict,
    load_state,
    save_state,
    state_path,
    state_steps,
)
from trainer_adapter.transport import read_step, step_dir
from verifiers.tokens import TrainingSample


def _by_length(request) -> str:
    """Reverses prompts of even length and echoes the others: the same reply for the same prompt, every time."""
    text = request.messages[-1]["content"]
    return text[::-1] if len(text) % 2 == 0 else text


class _Updater:
    async def update(self, weight_dir: str) -> dict:
        return {}


async def _fake_trainer(root: Path, start: int, steps: int) -> None:
    """Consume batch n, publish weights version n+1 (an empty folder is enough for the orchestrator)."""
    for step in range(start, steps):
        while not step_dir(root, step).is_dir():
            await asyncio.sleep(0.01)
        (root / "weights" / f"step_{step + 1}").mkdir(parents=True)


def _env():
    return vf.load_environment("reverse-text", num_train_examples=40, num_eval_examples=0)


def _orchestrator(root: Path, serve, client_for, config: OrchestratorConfig, slow_server: bool = False) -> Orchestrator:
    """``slow_server``: a second server answering after 0.5 s, so groups are still generating when a batch is full."""
    clients = [client_for(serve(_by_length))]
    if slow_server:
        clients.append(client_for(serve(_by_length, delay_s=0.5)))
    return Orchestrator(config, _env(), clients, [_Updater() for _ in clients], root, state_every=2)


async def _run(orchestrator: Orchestrator, steps: int) -> None:
    trainer = asyncio.create_task(_fake_trainer(orchestrator.root, orchestrator.start_step, steps))
    await asyncio.wait_for(orchestrator.run(steps), timeout=120)
    trainer.cancel()


# Sequential (one group at a time, synchronous): every draw, reply and pool update comes in one order.
SEQUENTIAL = OrchestratorConfig(
    batch_size=4, rollouts_per_example=2, max_inflight_groups=1, max_async_level=0, continuous_batching=False,
    max_tokens=32, weights_poll_s=0.02,
    buffer=BufferConfig(drop_uniform_groups=False, easy_threshold=0.9, hard_threshold=0.4, easy_fraction=0.25,
                        hard_fraction=0.25),
)


async def test_a_restored_orchestrator_writes_the_batches_an_uninterrupted_one_writes(
        tmp_path: Path, serve, client_for) -> None:
    straight = _orchestrator(tmp_path / "a", serve, client_for, SEQUENTIAL)
    await _run(straight, 6)
    assert state_steps(tmp_path / "a") == [2, 4, 6]

    resumed = _orchestrator(tmp_path / "b", serve, client_for, SEQUENTIAL)
    state = load_state(state_path(tmp_path / "a", 2))
    assert state.step == 2 and state.pending_examples == []  # synchronous: nothing in flight between batches
    assert resumed.restore(state, servers_version=2) == 0
    await _run(resumed, 6)

    for step in range(2, 6):  # the same problems, replies and advantages, packed the same way
        assert read_step(tmp_path / "b", step, 0) == read_step(tmp_path / "a", step, 0), step
    assert not step_dir(tmp_path / "b", 1).exists()
    assert resumed.buffer.pools() == straight.buffer.pools()
    assert any(resumed.buffer.pools()[level] for level in ("easy", "hard"))  # the pools took part in the draws
    assert resumed.buffer.rng.getstate() == straight.buffer.rng.getstate()
    assert resumed.buffer.filtered == straight.buffer.filtered

    def lines(root: Path) -> list[dict]:
        return [json.loads(x) for x in (root / "orchestrator_metrics.jsonl").read_text().splitlines()]

    straight_lines, resumed_lines = lines(tmp_path / "a"), lines(tmp_path / "b")
    assert [line["step"] for line in resumed_lines] == [2, 3, 4, 5]
    for a, b in zip(straight_lines[2:], resumed_lines):
        assert a["reward"] == b["reward"]
        # Counters go on from the state (weight_updates differs: the resumed servers start on version 2).
        assert {k: v for k, v in a.items() if k.endswith("_groups") or k.startswith("filtered/")} == \
            {k: v for k, v in b.items() if k.endswith("_groups") or k.startswith("filtered/")}
    final_a, final_b = (load_state(state_path(tmp_path / x, 6)).model_dump(exclude={"counts"}) for x in "ab")
    assert final_b == final_a


async def test_problems_in_flight_at_the_save_are_asked_first_then_the_draws_go_on(
        tmp_path: Path, serve, client_for) -> None:
    """Continuous batching: the state is saved with groups generating (on the slow server); a resumed run asks
    those again first, then draws what the uninterrupted run drew after the save."""
    config = OrchestratorConfig(batch_size=8, rollouts_per_example=4, max_inflight_groups=4, max_async_level=1,
                                max_tokens=32, weights_poll_s=0.02, buffer=BufferConfig(drop_uniform_groups=False))
    straight = _orchestrator(tmp_path / "a", serve, client_for, config, slow_server=True)
    draws: list[int] = []
    original_sample = straight.buffer.sample_problems

    def sample(n: int) -> list[int]:
        picked = original_sample(n)
        draws.extend(picked)
        return picked

    straight.buffer.sample_problems = sample  # type: ignore[method-assign]
    seen: dict[str, object] = {}
    original_state = straight.state

    def state(step: int) -> OrchestratorState:
        saved = original_state(step)
        if step == 2:
            seen.update(draws=len(draws), inflight=[i.example_id for i in straight.inflight.values()],
                        pools=straight.buffer.pools(), waiting=len(straight.buffer.groups))
        return saved

    straight.state = state  # type: ignore[method-assign]
    await _run(straight, 4)
    assert seen["inflight"], "the test needs groups in flight when the state is saved"

    resumed = _orchestrator(tmp_path / "b", serve, client_for, config, slow_server=True)
    saved = load_state(state_path(tmp_path / "a", 2))
    assert saved.pending_examples == seen["inflight"]
    resumed.restore(saved, servers_version=2)
    assert resumed.buffer.pools() == seen["pools"]
    assert len(resumed.buffer.groups) == seen["waiting"]  # none is more than 8 steps behind
    after_save = draws[int(seen["draws"]):]  # type: ignore[call-overload]
    assert len(after_save) >= 3
    expected = list(seen["inflight"]) + after_save  # type: ignore[call-overload]
    assert [resumed.next_example() for _ in expected] == expected


def _group(example_id: int, version: int, logprob: float = -0.5) -> RolloutGroup:
    samples = [TrainingSample([1, 2], [0, 0], [3, 4], [1, 1], [logprob, -1.25])]
    return RolloutGroup(example_id, [Rollout(1.0, samples, advantage=0.5), Rollout(0.0, samples, advantage=-0.5)],
                        version, task="default", metrics={"lcs": 0.5})


def test_waiting_groups_too_far_behind_the_resumed_step_are_dropped_and_counted(tmp_path: Path) -> None:
    config = OrchestratorConfig(batch_size=4, rollouts_per_example=2, max_off_policy_steps=1)
    orchestrator = Orchestrator(config, _env(), [object()], [_Updater()], tmp_path)
    state = orchestrator.state(4).model_copy(update={
        "waiting_groups": [group_to_dict(_group(1, 0)), group_to_dict(_group(2, 2)), group_to_dict(_group(3, 3))],
        "counts": {"stale_groups": 5},
    })
    assert orchestrator.restore(state, servers_version=4) == 2
    assert [g.example_id for g in orchestrator.buffer.groups] == [3]  # 4 − 3 = 1 step behind: kept
    assert orchestrator.counts["stale_groups"] == 7
    assert orchestrator.start_step == 4 and orchestrator.version == 4


def test_a_state_from_another_dataset_is_refused(tmp_path: Path) -> None:
    orchestrator = Orchestrator(OrchestratorConfig(), _env(), [object()], [_Updater()], tmp_path)
    other = vf.load_environment("reverse-text", num_train_examples=30, num_eval_examples=0)
    state = Orchestrator(OrchestratorConfig(), other, [object()], [_Updater()], tmp_path).state(2)
    with pytest.raises(ValueError, match="dataset changed"):
        orchestrator.restore(state, servers_version=2)


def test_the_state_file_round_trips_and_is_written_atomically(tmp_path: Path) -> None:
    orchestrator = Orchestrator(OrchestratorConfig(), _env(), [object()], [_Updater()], tmp_path)
    group = _group(7, 1, logprob=-math.inf)  # a sampler may report -inf; JSON keeps it
    state = orchestrator.state(2).model_copy(update={"waiting_groups": [group_to_dict(group)],
                                                     "pending_examples": [3, 1]})
    path = save_state(tmp_path, state)
    assert path == state_path(tmp_path, 2)
    assert [p.name for p in path.parent.iterdir()] == ["step_2.json"]  # no temporary file left
    loaded = load_state(path)
    assert loaded == state
    assert group_from_dict(loaded.waiting_groups[0]) == group
    assert json.loads(path.read_text())["format"] == 1


@pytest.mark.parametrize(("text", "message"), [
    ('{"format": 2, "step": 1}', "format 2"),
    ('{"format": 1, "step": 1', "not valid JSON"),
    ('{"format": 1, "step": -1}', "malformed"),
])
def test_bad_state_files_are_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "step_1.json"
    path.write_text(text)
    with pytest.raises(CheckpointError, match=message):
        load_state(path)
    with pytest.raises(CheckpointError, match="no orchestrator state"):
        load_state(tmp_path / "step_9.json")
