"""The orchestrator loop against the scripted server, with a stand-in trainer that publishes weight folders."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

import pytest

import verifiers as vf
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


async def _run(tmp_path: Path, serve, client_for, steps: int, **overrides):
    env = vf.load_environment("reverse-text", num_train_examples=40, num_eval_examples=6)
    clients = [client_for(serve(_half_right())), client_for(serve(_half_right()))]
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


async def test_async_level_zero_is_on_policy(tmp_path, serve, client_for) -> None:
    _, _, lines = await _run(tmp_path, serve, client_for, steps=3, max_async_level=0, max_off_policy_steps=0)
    assert [line["servers_version"] for line in lines] == [0, 1, 2]
    assert all(line["off_policy_max"] == 0 for line in lines)


async def test_held_out_evaluation_every_m_steps_and_at_the_end(tmp_path, serve, client_for) -> None:
    await _run(tmp_path, serve, client_for, steps=3, max_async_level=0, eval_every=2, eval_examples=6)
    lines = [json.loads(x) for x in (tmp_path / "eval_metrics.jsonl").read_text().splitlines()]
    assert sorted((line["step"], line["weights_version"]) for line in lines) == [(0, 0), (2, 2), (3, 3)]
    assert all(line["examples"] == 6 and 0 < line["reward"] <= 1 for line in lines)


def test_bad_shapes_are_rejected(tmp_path) -> None:
    env = vf.load_environment("reverse-text", num_train_examples=4, num_eval_examples=0)
    with pytest.raises(ValueError, match="multiple of rollouts_per_example"):
        Orchestrator(OrchestratorConfig(batch_size=6, rollouts_per_example=4), env, [object()], [RecordingUpdater()],
                     tmp_path)
    with pytest.raises(ValueError, match="one weight updater per client"):
        Orchestrator(OrchestratorConfig(), env, [object()], [], tmp_path)
