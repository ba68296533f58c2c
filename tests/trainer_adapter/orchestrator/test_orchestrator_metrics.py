"""The orchestrator's Prometheus metrics agree with its own JSONL record of the same run (scripted servers)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

import verifiers as vf
from trainer_adapter.orchestrator.metrics import OrchestratorMetrics
from trainer_adapter.orchestrator.orchestrator import Orchestrator, OrchestratorConfig
from trainer_adapter.transport import step_dir
from verifiers.testing.policies import Reply


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
    assert sum(value("vf_orchestrator_dropped_rollouts_total", reason=r) for r in ("stale", "cancelled")) == 4 * (
        last.get("stale_groups", 0) + last.get("cancelled_groups", 0))


def test_one_orchestrator_metrics_per_registry() -> None:
    registry = CollectorRegistry()
    OrchestratorMetrics(registry)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        OrchestratorMetrics(registry)
