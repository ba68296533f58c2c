"""The orchestrator loop against the scripted server, with a stand-in trainer that publishes weight folders."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from pathlib import Path

import pytest
from pydantic import ValidationError

import verifiers as vf
from trainer_adapter.orchestrator.buffer import BufferConfig
from trainer_adapter.orchestrator.env_mix import EnvConfig, load_env_mix
from trainer_adapter.orchestrator.errors import NoLearningSignalError
from trainer_adapter.orchestrator.orchestrator import Orchestrator, OrchestratorConfig
from trainer_adapter.transport import read_step, step_dir


def _half_right():
    """Reverses every other request it sees, so a group's rewards differ (uniform groups are dropped)."""
    counter = itertools.count()

    def policy(request) -> str:
        text = request.messages[-1]["content"]
        return text[::-1] if next(counter) % 2 else text

    return policy


class RecordingUpdater:
    """Stands in for a server's weight routes: records every folder it is told to load."""

    def __init__(self) -> None:
        self.loaded: list[str] = []

    async def update(self, weight_dir: str) -> dict:
        assert Path(weight_dir).is_dir()
        self.loaded.append(weight_dir)
        return {"version": len(self.loaded)}


async def _fake_trainer(root: Path, steps: int, seconds_per_step: float) -> None:
    """Consume batch n, 'train', publish weights version n+1 (an empty folder is enough here)."""
    for step in range(steps):
        while not step_dir(root, step).is_dir():
            await asyncio.sleep(0.01)
        await asyncio.sleep(seconds_per_step)
        (root / "weights" / f"step_{step + 1}").mkdir(parents=True)


async def _run(tmp_path: Path, serve, client_for, steps: int, policy=_half_right, **overrides):
    env = vf.load_environment("reverse-text", num_train_examples=40, num_eval_examples=6)
    clients = [client_for(serve(policy())), client_for(serve(policy()))]
    updaters = [RecordingUpdater(), RecordingUpdater()]
    config = OrchestratorConfig(batch_size=8, rollouts_per_example=4, max_inflight_groups=4, max_tokens=32,
                                num_train_ranks=2, weights_poll_s=0.02, **overrides)
    orchestrator = Orchestrator(config, env, clients, updaters, tmp_path)
    trainer = asyncio.create_task(_fake_trainer(tmp_path, steps, seconds_per_step=0.3))
    await asyncio.wait_for(orchestrator.run(steps), timeout=120)
    trainer.cancel()
    lines = [json.loads(x) for x in (tmp_path / "orchestrator_metrics.jsonl").read_text().splitlines()]
    return orchestrator, updaters, lines


async def test_batches_respect_the_async_level_and_carry_group_advantages(tmp_path, serve, client_for) -> None:
    orchestrator, updaters, lines = await _run(tmp_path, serve, client_for, steps=4, max_async_level=1)
    assert [line["step"] for line in lines] == [0, 1, 2, 3]
    assert all(line["servers_version"] >= line["step"] - 1 for line in lines)  # the async barrier
    assert all(line["rollouts"] == 8 for line in lines)
    for step in range(4):
        micro_batches = [mb for rank in (0, 1) for mb in read_step(tmp_path, step, rank)]
        assert len(read_step(tmp_path, step, 0)) == len(read_step(tmp_path, step, 1))  # ranks kept in step
        trained = [mb for mb in micro_batches if any(mb.loss_mask)]
        assert sum(len(mb.sample_lengths) for mb in trained) == 8
        assert all(v <= step for mb in trained for v in mb.policy_versions)
    # Every server got the same versions, in order, while groups were in flight.
    assert updaters[0].loaded == updaters[1].loaded
    versions = [int(p.rsplit("_", 1)[1]) for p in updaters[0].loaded]
    assert versions == sorted(versions) and versions[0] >= 1
    assert orchestrator.inflight == {}  # nothing left running


async def test_std_normalised_advantages_reach_the_batch(tmp_path, serve, client_for) -> None:
    await _run(tmp_path, serve, client_for, steps=1, max_async_level=0, advantage_std_normalize=True)
    micro_batches = [mb for rank in (0, 1) for mb in read_step(tmp_path, 0, rank) if any(mb.loss_mask)]
    per_sample = [mb.advantages[sum(mb.sample_lengths[:i])] for mb in micro_batches
                  for i in range(len(mb.sample_lengths))]
    assert len(per_sample) == 8
    # Each group's advantages have population std 1 (less the 1e-6), so their mean square over the batch is 1.
    assert sum(a * a for a in per_sample) / 8 == pytest.approx(1.0, rel=1e-4)


async def test_async_level_zero_is_on_policy(tmp_path, serve, client_for) -> None:
    _, _, lines = await _run(tmp_path, serve, client_for, steps=3, max_async_level=0, max_off_policy_steps=0)
    assert [line["servers_version"] for line in lines] == [0, 1, 2]
    assert all(line["off_policy_max"] == 0 for line in lines)


async def test_held_out_evaluation_every_m_steps_and_at_the_end(tmp_path, serve, client_for) -> None:
    await _run(tmp_path, serve, client_for, steps=3, max_async_level=0, eval_every=2, eval_examples=6)
    lines = [json.loads(x) for x in (tmp_path / "eval_metrics.jsonl").read_text().splitlines()]
    assert sorted((line["step"], line["weights_version"]) for line in lines) == [(0, 0), (2, 2), (3, 3)]
    assert all(line["examples"] == 6 and 0 < line["reward"] <= 1 for line in lines)
    assert all(line["rollouts"] == 6 and line["temperature"] == 0.0 for line in lines)  # greedy, one reply a row


async def test_held_out_evaluation_can_sample_several_replies_a_row(tmp_path, serve, client_for) -> None:
    eval_temperatures: list[float] = []

    def recording():
        half_right = _half_right()

        def policy(request) -> str:
            if not request.sampling.get("logprobs"):  # training requests ask for logprobs, evaluations do not
                eval_temperatures.append(request.sampling["temperature"])
            return half_right(request)

        return policy

    await _run(tmp_path, serve, client_for, steps=2, policy=recording, max_async_level=0, eval_every=2,
               eval_examples=6, eval_rollouts_per_example=3, eval_temperature=0.7)
    lines = [json.loads(x) for x in (tmp_path / "eval_metrics.jsonl").read_text().splitlines()]
    assert sorted(line["step"] for line in lines) == [0, 2]
    assert all(line["examples"] == 6 and line["rollouts"] == 18 and line["temperature"] == 0.7 for line in lines)
    # the half-right server answers every other request correctly, so a row's three replies are not all equal
    assert all(0 < line["reward"] < 1 for line in lines)
    assert eval_temperatures == [0.7] * 36


def test_a_negative_eval_temperature_or_zero_replies_is_refused() -> None:
    with pytest.raises(ValidationError, match="eval_temperature"):
        OrchestratorConfig(eval_temperature=-0.1)
    with pytest.raises(ValidationError, match="eval_rollouts_per_example"):
        OrchestratorConfig(eval_rollouts_per_example=0)


def test_bad_shapes_are_rejected(tmp_path) -> None:
    env = vf.load_environment("reverse-text", num_train_examples=4, num_eval_examples=0)
    with pytest.raises(ValueError, match="multiple of rollouts_per_example"):
        Orchestrator(OrchestratorConfig(batch_size=6, rollouts_per_example=4), env, [object()], [RecordingUpdater()],
                     tmp_path)
    with pytest.raises(ValueError, match="one weight updater per client"):
        Orchestrator(OrchestratorConfig(), env, [object()], [], tmp_path)


class InflightRecordingUpdater(RecordingUpdater):
    """Also records how many groups were generating when each update arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.orchestrator: Orchestrator | None = None
        self.inflight_at_update: list[int] = []

    async def update(self, weight_dir: str) -> dict:
        assert self.orchestrator is not None
        self.inflight_at_update.append(len(self.orchestrator.inflight))
        return await super().update(weight_dir)


async def test_synchronous_baseline_has_nothing_in_flight_across_updates(tmp_path, serve, client_for) -> None:
    env = vf.load_environment("reverse-text", num_train_examples=40, num_eval_examples=0)
    updater = InflightRecordingUpdater()
    config = OrchestratorConfig(batch_size=8, rollouts_per_example=4, max_inflight_groups=16, max_tokens=32,
                                weights_poll_s=0.02, max_async_level=0, continuous_batching=False)
    orchestrator = Orchestrator(config, env, [client_for(serve(_half_right()))], [updater], tmp_path)
    updater.orchestrator = orchestrator
    peak = 0
    original = orchestrator._schedule

    def schedule(limit: int) -> None:  # spy on how many groups the baseline lets run at once
        nonlocal peak
        original(limit)
        peak = max(peak, len(orchestrator.inflight))

    orchestrator._schedule = schedule  # type: ignore[method-assign]
    trainer = asyncio.create_task(_fake_trainer(tmp_path, 3, seconds_per_step=0.1))
    await asyncio.wait_for(orchestrator.run(3), timeout=120)
    trainer.cancel()
    lines = [json.loads(x) for x in (tmp_path / "orchestrator_metrics.jsonl").read_text().splitlines()]
    assert [line["servers_version"] for line in lines] == [0, 1, 2]
    assert all(line["off_policy_max"] == 0 and line["rollouts"] == 8 for line in lines)
    assert updater.inflight_at_update == [0, 0]  # no update lands while a group generates
    assert peak <= 2  # only the groups the batch still needs (8 rollouts = 2 groups), not max_inflight_groups


async def test_all_equal_rewards_stop_with_a_clear_error(tmp_path, serve, client_for) -> None:
    """A model that echoes every prompt scores 0 everywhere: every group is dropped, so no batch can ever fill."""
    env = vf.load_environment("reverse-text", num_train_examples=40, num_eval_examples=0)
    config = OrchestratorConfig(batch_size=8, rollouts_per_example=4, max_inflight_groups=4, max_tokens=32,
                                weights_poll_s=0.02, max_fruitless_groups=6)
    orchestrator = Orchestrator(config, env, [client_for(serve("echo"))], [RecordingUpdater()], tmp_path)
    with pytest.raises(NoLearningSignalError, match=r"last 6 groups gave the batch nothing.*'uniform': 6"):
        await asyncio.wait_for(orchestrator.run(2), timeout=60)
    assert orchestrator.inflight == {}
    assert not (tmp_path / "orchestrator_metrics.jsonl").exists()


async def test_one_accepted_group_resets_the_fruitless_count(tmp_path, serve, client_for) -> None:
    """Every other group is uniform; with a bound of 2 in a row the run still finishes."""
    counter = itertools.count()

    def alternating(request) -> str:  # groups of 4 requests: one all-echo group, then one half-right group
        n = next(counter)
        text = request.messages[-1]["content"]
        return text[::-1] if (n // 4) % 2 and n % 2 else text

    env = vf.load_environment("reverse-text", num_train_examples=40, num_eval_examples=0)
    config = OrchestratorConfig(batch_size=8, rollouts_per_example=4, max_inflight_groups=1, max_tokens=32,
                                weights_poll_s=0.02, max_async_level=2, max_fruitless_groups=2)
    orchestrator = Orchestrator(config, env, [client_for(serve(alternating))], [RecordingUpdater()], tmp_path)
    await asyncio.wait_for(orchestrator.run(2), timeout=60)
    assert orchestrator.buffer.filtered["uniform"] >= 2


async def test_environments_are_mixed_by_weight(tmp_path, serve, client_for) -> None:
    """Each environment of the mix runs and scores its own rows; draws follow the weights, not the row counts."""
    env, weights = load_env_mix([
        EnvConfig(id="reverse-text", args={"num_train_examples": 30, "num_eval_examples": 0}, weight=1.0),
        EnvConfig(id="arithmetic", args={"num_train_examples": 300, "num_eval_examples": 0}, weight=1.0),
    ])
    config = OrchestratorConfig(batch_size=16, rollouts_per_example=4, max_inflight_groups=4, max_tokens=32,
                                weights_poll_s=0.02, max_async_level=4,
                                buffer=BufferConfig(drop_uniform_groups=False))
    orchestrator = Orchestrator(config, env, [client_for(serve(_half_right()))], [RecordingUpdater()], tmp_path,
                                task_weights=weights)
    await asyncio.wait_for(orchestrator.run(4), timeout=120)
    lines = [json.loads(x) for x in (tmp_path / "orchestrator_metrics.jsonl").read_text().splitlines()]
    keys = ("reward/reverse-text", "reward/arithmetic")
    rewards = {key: [line[key] for line in lines if key in line] for key in keys}
    assert rewards["reward/reverse-text"] and rewards["reward/arithmetic"]
    assert all(r > 0 for r in rewards["reward/reverse-text"])  # half the reversals are right (LCS reward)
    assert all(r == 0 for r in rewards["reward/arithmetic"])  # a reversed or echoed sum is never the sum
    drawn = orchestrator.buffer.sample_problems(4000)
    tasks = [orchestrator.rows[i]["task"] for i in drawn]
    assert 0.45 < tasks.count("reverse-text") / len(tasks) < 0.55  # 1:1, although arithmetic has 10x the rows


async def test_a_mix_logs_each_environments_reward_and_share_and_evaluates_each(tmp_path, serve, client_for,
                                                                                 caplog) -> None:
    """Metrics lines carry reward/<task> and share/<task>; the step's log line shows them; evaluations cover both."""
    caplog.set_level(logging.INFO, logger="trainer_adapter.orchestrator")
    env, weights = load_env_mix([
        EnvConfig(id="reverse-text", args={"num_train_examples": 30, "num_eval_examples": 4}, weight=3.0),
        EnvConfig(id="arithmetic", args={"num_train_examples": 300, "num_eval_examples": 4}, weight=1.0),
    ])
    config = OrchestratorConfig(batch_size=16, rollouts_per_example=2, max_inflight_groups=4, max_tokens=32,
                                weights_poll_s=0.02, max_async_level=0, eval_every=2, eval_examples=3,
                                buffer=BufferConfig(drop_uniform_groups=False))
    orchestrator = Orchestrator(config, env, [client_for(serve(_half_right()))], [RecordingUpdater()], tmp_path,
                                task_weights=weights)
    trainer = asyncio.create_task(_fake_trainer(tmp_path, 6, seconds_per_step=0.01))
    await asyncio.wait_for(orchestrator.run(6), timeout=120)
    trainer.cancel()
    lines = [json.loads(x) for x in (tmp_path / "orchestrator_metrics.jsonl").read_text().splitlines()]
    for line in lines:
        shares = {k: v for k, v in line.items() if k.startswith("share/")}
        assert set(shares) <= {"share/reverse-text", "share/arithmetic"} and sum(shares.values()) == pytest.approx(1)
        assert all(f"reward/{k.removeprefix('share/')}" in line for k in shares)
    rollouts = sum(line["rollouts"] for line in lines)
    reverse = sum(line.get("share/reverse-text", 0) * line["rollouts"] for line in lines) / rollouts
    assert 0.55 < reverse < 0.95  # 3:1 over 48 groups, where the row counts alone would give 30:300
    printed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("step ")]
    assert len(printed) == 6 and printed[0].startswith("step 1/6  reward ")
    assert all("reverse-text" in x or "arithmetic" in x for x in printed)
    evals = [json.loads(x) for x in (tmp_path / "eval_metrics.jsonl").read_text().splitlines()]
    assert sorted(e["step"] for e in evals) == [0, 2, 4, 6]
    for line in evals:  # each environment on its own eval rows, not the group's first rows
        assert line["examples"] == 6 and line["reward/arithmetic"] == 0.0 and line["reward/reverse-text"] > 0
