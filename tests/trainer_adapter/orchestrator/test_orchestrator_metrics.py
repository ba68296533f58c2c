"""The orchestrator's Prometheus metrics agree with its own JSONL record of the same run (scripted servers), and
groups left behind by the weights are dropped and counted (stale in the buffer, cancelled in flight)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest
from openai import AsyncOpenAI
from prometheus_client import CollectorRegistry

import verifiers as vf
from trainer_adapter.orchestrator.metrics import OrchestratorMetrics
from trainer_adapter.orchestrator.orchestrator import Orchestrator, OrchestratorConfig
from trainer_adapter.transport import read_step, step_dir
from verifiers.testing import ScriptedServer
from verifiers.testing.policies import Reply, ScriptedRequest


class Updater:
    async def update(self, weight_dir: str) -> dict:
        return {"loaded": weight_dir}


async def _trainer(root: Path, steps: int) -> None:
    for step in range(steps):
        while not step_dir(root, step).is_dir():
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        (root / "weights" / f"step_{step + 1}").mkdir(parents=True)


def drop_and_reject_policy():
    """Per prompt, in the order prompts first arrive: the first is always echoed (a uniform group: rejected),
    the second's first request fails (400, not retried: its group comes back one rollout short), and every
    prompt after alternates echo and reverse (rewards differ: the group trains). Keyed by prompt, not by
    arrival, since the rollouts of groups in flight together interleave."""
    order: dict[str, int] = {}
    seen: Counter[str] = Counter()

    def policy(request):
        text = request.messages[-1]["content"]
        rank = order.setdefault(text, len(order))
        seen[text] += 1
        if rank == 1 and seen[text] == 1:
            return Reply(content="scripted refusal", status=400)
        return text if rank == 0 or seen[text] % 2 else text[::-1]

    return policy


async def test_counters_and_histograms_match_the_runs_jsonl(tmp_path: Path, serve, client_for) -> None:
    registry = CollectorRegistry()
    env = vf.load_environment("reverse-text", num_train_examples=40, num_eval_examples=0)
    config = OrchestratorConfig(batch_size=8, rollouts_per_example=4, max_inflight_groups=2, max_tokens=32,
                                weights_poll_s=0.02, max_async_level=1, coalesce_requests=False)
    orchestrator = Orchestrator(config, env, [client_for(serve(drop_and_reject_policy()))], [Updater()], tmp_path,
                                metrics=OrchestratorMetrics(registry))
    trainer = asyncio.create_task(_trainer(tmp_path, 3))
    await asyncio.wait_for(orchestrator.run(3), timeout=120)
    trainer.cancel()
    lines = [json.loads(x) for x in (tmp_path / "orchestrator_metrics.jsonl").read_text().splitlines()]

    def value(name: str, **labels: str) -> float:
        return registry.get_sample_value(name, labels) or 0.0

    last = lines[-1]
    assert value("vf_orchestrator_step") == 2
    assert value("vf_orchestrator_weights_version") == orchestrator.version
    assert value("vf_orchestrator_step_seconds_count") == 3
    assert value("vf_orchestrator_step_seconds_sum") == pytest.approx(sum(x["time/step"] for x in lines))
    assert value("vf_orchestrator_wait_for_weights_seconds_total") == pytest.approx(
        sum(x["time/wait_for_weights"] for x in lines))
    assert value("vf_orchestrator_off_policy_steps_count") == 3 * 2  # two groups a batch
    assert value("vf_orchestrator_off_policy_steps_sum") == sum(2 * x["off_policy_mean"] for x in lines)
    failed = value("vf_orchestrator_dropped_rollouts_total", reason="failed")
    assert failed == last["failed_rollouts"] == 1
    assert value("vf_orchestrator_dropped_rollouts_total", reason="incomplete") == 3 * last["incomplete_groups"] == 3
    rejected = value("vf_orchestrator_rejected_rollouts_total", reason="uniform")
    assert rejected == 4 * last["filtered/uniform"] >= 4
    kept = value("vf_orchestrator_rollouts_total") - failed - 3 - rejected
    assert kept >= 3 * 8  # every batch's rollouts came back (and perhaps some that still wait in the buffer)
    # nothing falls 8 versions behind in 3 steps: the stale and cancelled drops are forced in the test below
    for reason in ("stale", "cancelled"):
        assert value("vf_orchestrator_dropped_rollouts_total", reason=reason) == last.get(f"{reason}_groups", 0) == 0


class Gate:
    """A policy that holds every request until the test opens its prompt (or everything); then the sum on every
    other reply to a prompt and a wrong one between, so each group's rewards differ (a uniform group would be
    filtered before it reached the buffer)."""

    def __init__(self) -> None:
        self.opened: set[str] = set()
        self.everything = False
        self._asked: Counter[str] = Counter()

    async def __call__(self, request: ScriptedRequest) -> str:
        text = request.last_user_text
        while not (self.everything or text in self.opened):
            await asyncio.sleep(0.005)
        self._asked[text] += 1
        a, b = text.split("+")
        return str(int(a) + int(b)) if self._asked[text] % 2 else "0"


async def test_groups_left_behind_by_the_weights_are_dropped_and_counted(tmp_path: Path) -> None:
    """Step by step: group A is held back while the trainer's step passes it (stale in the buffer), and C, D are
    in flight when newer weights arrive (cancelled), with max_off_policy_steps = 0."""
    registry = CollectorRegistry()
    env = vf.load_environment("arithmetic", num_train_examples=1000, num_eval_examples=0)
    config = OrchestratorConfig(batch_size=4, rollouts_per_example=4, max_inflight_groups=2, max_tokens=8,
                                weights_poll_s=0.01, max_async_level=1, max_off_policy_steps=0,
                                coalesce_requests=False)
    gate = Gate()
    async with ScriptedServer(gate, port=0).serving() as base_url:
        client = AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
        orchestrator = Orchestrator(config, env, [client], [Updater()], tmp_path, metrics=OrchestratorMetrics(registry))
        run = asyncio.create_task(orchestrator.run(2))

        async def until(done) -> None:
            while not done():
                if run.done():
                    run.result()  # the run failed (or ended early): its error, here
                    raise AssertionError("the run ended before the scenario did")
                await asyncio.sleep(0.005)

        def in_flight() -> list:
            return list(orchestrator.inflight.values())

        def running(group) -> bool:
            return any(g is group for g in in_flight())

        def text(group) -> str:
            return orchestrator.rows[group.example_id]["prompt"][-1]["content"]

        async def scenario() -> None:
            await until(lambda: len(in_flight()) == 2)
            a, b = in_flight()  # dispatch order
            gate.opened.add(text(b))  # B fills batch 0 (versions 0)
            await until(lambda: step_dir(tmp_path, 0).is_dir() and len(in_flight()) == 2)
            assert in_flight()[0] is a
            c = in_flight()[1]
            gate.opened.add(text(a))  # A comes back at step 1 from version 0: one step behind, more than 0
            await until(lambda: not running(a) and len(in_flight()) == 2)  # dropped; D asked in its place
            d = in_flight()[1]
            assert len({text(g) for g in (a, b, c, d)}) == 4, "the gate opens by prompt: each group its own"
            assert orchestrator.version == 0 and all(g.version == 0 for g in (a, b, c, d))
            (tmp_path / "weights" / "step_1").mkdir(parents=True)  # version 1 while C and D generate: cancelled
            await until(lambda: orchestrator.version == 1 and not running(c) and not running(d))
            gate.everything = True  # the groups of version 1 fill batch 1
            await run

        await asyncio.wait_for(scenario(), timeout=60)

    def dropped(reason: str) -> float:
        return registry.get_sample_value("vf_orchestrator_dropped_rollouts_total", {"reason": reason}) or 0.0

    lines = [json.loads(x) for x in (tmp_path / "orchestrator_metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [0, 1]
    assert (lines[1]["stale_groups"], lines[1]["cancelled_groups"]) == (1, 2)
    assert (orchestrator.counts["stale_groups"], orchestrator.counts["cancelled_groups"]) == (1, 2)
    assert (dropped("stale"), dropped("cancelled")) == (4, 8)  # rollouts: 4 a group
    trained = [v for mb in read_step(tmp_path, 1, 0) if any(mb.loss_mask) for v in mb.policy_versions]
    assert trained and set(trained) == {1}  # none of A's rollouts (version 0) reached batch 1


def test_one_orchestrator_metrics_per_registry() -> None:
    registry = CollectorRegistry()
    OrchestratorMetrics(registry)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        OrchestratorMetrics(registry)
