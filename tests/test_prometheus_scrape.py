"""A real Prometheus (Debian's) scrapes every component's /metrics on 127.0.0.1 and answers queries on them.

Four targets, each what a deployment runs: the orchestrator (scripted inference servers, its endpoint from
``orchestrator.metrics``, with a validator's counts on its registry) feeding a real RL trainer process
(``python -m trainer_adapter.train.rl``, rank 0's endpoint from ``metrics.port``), sandboxes of the local
backend (the process's registry, served as any program serves it), and ``vf-hub serve --workers 2``
(``/metrics`` on its own port, both workers added up).
Prometheus scrapes them every second; each metric is read back through its HTTP API, and every query of the
Grafana dashboard (docs/grafana/verifiers.json) runs there and returns data.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY, CollectorRegistry

import verifiers as vf
from hub_server.testing.dists import make_wheel, upload_form
from tests.trainer_adapter.orchestrator.test_orchestrator_metrics import drop_and_reject_policy
from trainer_adapter.model.config import ModelConfig
from trainer_adapter.model.tokenizer import build_tokenizer
from trainer_adapter.orchestrator.metrics import OrchestratorMetrics
from trainer_adapter.orchestrator.orchestrator import Orchestrator, OrchestratorConfig
from trainer_adapter.train.rl import RLTrainerConfig
from trainer_adapter.validate.assignment import assigned_problems
from trainer_adapter.validate.metrics import ValidatorMetrics
from trainer_adapter.validate.validator import Validator, ValidatorConfig
from trainer_adapter.validate.workers import HonestWorker, Sampling, arithmetic_prompts, peaked_tiny_model
from verifiers.metrics_server import MetricsConfig, serve_configured, serve_metrics
from verifiers.sandboxes import AsyncSandboxClient, CreateSandboxRequest, LocalBackend, LocalBackendConfig

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "docs" / "grafana" / "verifiers.json"
HEALTH_CHECKS = 12


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def prometheus_binary() -> str:
    found = shutil.which("prometheus")
    if found is None:
        pytest.skip("needs Debian's prometheus: bash scripts/setup_prometheus.sh")
    return found


def _log_tail(path: Path) -> str:
    return path.read_text(errors="replace")[-3000:] if path.exists() else ""


@contextmanager
def _process(command: list[str], log: Path, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                   env={**os.environ, **(env or {})}, start_new_session=True)
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 15)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait()


async def _until(check: Callable[[], Any], what: str, timeout: float = 90.0) -> Any:
    """Poll ``check`` (sync or async) until it returns something truthy."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.25)


# -- the Hub -----------------------------------------------------------------------------------------------

async def _hub_traffic(url: str, token: str, tmp_path: Path) -> None:
    """An upload, two downloads, one failed authentication and HEALTH_CHECKS health checks."""
    auth = {"Authorization": "Basic " + base64.b64encode(f"__token__:{token}".encode()).decode()}
    wheel = make_wheel(tmp_path, "demo-env", "0.1.0")
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        with wheel.open("rb") as handle:
            uploaded = await client.post("/legacy/", data=upload_form(wheel, "demo-env", "0.1.0"), headers=auth,
                                         files={"content": (wheel.name, handle, "application/octet-stream")})
        assert uploaded.status_code == 200, uploaded.text
        index = await client.get("/simple/demo-env/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        file_url = index.json()["files"][0]["url"]
        for _ in range(2):
            assert (await client.get(file_url)).status_code == 200
        bad = {"Authorization": "Basic " + base64.b64encode(b"__token__:vfh_not-a-token").decode()}
        assert (await client.post("/legacy/", headers=bad)).status_code == 403
        for _ in range(HEALTH_CHECKS):
            assert (await client.get("/health")).status_code == 200


@contextmanager
def _hub(tmp_path: Path, port: int) -> Iterator[tuple[str, str]]:
    """``vf-hub serve --workers 2`` on ``port``; yields its URL and a publish token."""
    data = tmp_path / "hub"
    vf_hub = str(Path(sys.executable).parent / "vf-hub")
    created = subprocess.run([vf_hub, "admin", "create-user", "alice", "--data-dir", str(data)],
                             capture_output=True, text=True, check=True)
    token = created.stdout.strip().splitlines()[-1]
    command = [vf_hub, "serve", "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(data),
               "--workers", "2", "--no-access-log"]
    with _process(command, tmp_path / "hub.log") as process:
        yield f"http://127.0.0.1:{port}", token
        assert process.poll() is None, _log_tail(tmp_path / "hub.log")


# -- Prometheus --------------------------------------------------------------------------------------------

def _scrape_config(targets: dict[str, int]) -> str:
    jobs = "".join(f"  - job_name: {job}\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
                   for job, port in targets.items())
    return f"global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n{jobs}"


class PrometheusAPI:
    """Instant queries against a Prometheus server's HTTP API."""

    def __init__(self, url: str) -> None:
        self.client = httpx.AsyncClient(base_url=url, timeout=10)

    async def query(self, expr: str) -> list[dict[str, Any]]:
        response = await self.client.get("/api/v1/query", params={"query": expr})
        body = response.json()
        assert response.status_code == 200 and body["status"] == "success", (expr, body)
        return list(body["data"]["result"])

    async def value(self, expr: str) -> float | None:
        """The single value ``expr`` has now, or None when it has no series."""
        result = await self.query(expr)
        assert len(result) <= 1, (expr, result)
        return float(result[0]["value"][1]) if result else None


@asynccontextmanager
async def _prometheus(binary: str, tmp_path: Path, targets: dict[str, int]) -> AsyncIterator[PrometheusAPI]:
    config = tmp_path / "prometheus.yml"
    config.write_text(_scrape_config(targets))
    port = _free_port()
    command = [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
               f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"]
    with _process(command, tmp_path / "prometheus.log") as process:
        api = PrometheusAPI(f"http://127.0.0.1:{port}")

        async def ready() -> bool:
            assert process.poll() is None, _log_tail(tmp_path / "prometheus.log")
            try:
                return (await api.client.get("/-/ready")).status_code == 200
            except httpx.TransportError:
                return False

        await _until(ready, "Prometheus to be ready")
        try:
            yield api
        finally:
            await api.client.aclose()


# -- the orchestrator and the trainer ------------------------------------------------------------------------

class Updater:
    """Stands in for an inference server's weight routes (the trainer's weights are real, no vLLM here)."""

    async def update(self, weight_dir: str) -> dict[str, str]:
        assert Path(weight_dir).is_dir()
        return {"loaded": weight_dir}


def _trainer_command(run: Path, port: int) -> list[str]:
    # Three steps: after the orchestrator's two batches it waits for a third, alive and scrapable.
    config = RLTrainerConfig(model=ModelConfig(seed=5), output_dir=run, max_steps=3, batch_timeout_s=300,
                             metrics=MetricsConfig(port=port))
    path = run.parent / "trainer.json"
    path.write_text(config.model_dump_json())
    return [sys.executable, "-m", "trainer_adapter.train.rl", str(path)]


def _validate_two_batches(registry: CollectorRegistry) -> None:
    """The validator's work, on the orchestrator's registry (where a run's validator records): an honest batch
    accepted, a malformed one rejected by the schema check."""
    model, eos, prompts = peaked_tiny_model(seed=0), build_tokenizer().eos_token_id, arithmetic_prompts(4)
    config = ValidatorConfig(problems_per_step=1, rollouts_per_problem=2, commitment_tolerance=2.5e-4,
                             logprob_tolerance=7.5e-5, eos_floor=1e-4, sampling_threshold=5.0)
    validator = Validator(model, eos, prompts, config, metrics=ValidatorMetrics(registry))
    worker = HonestWorker("honest", model, prompts, eos, Sampling(max_tokens=16))
    batch = worker.batch(0, assigned_problems(0, "honest", len(prompts), 1), 2, seed=0)
    assert validator.validate(batch.model_dump()).accepted
    assert validator.validate({"worker": "honest", "step": -1}).checks == {"schema"}


# -- the test ------------------------------------------------------------------------------------------------

async def test_prometheus_scrapes_every_component_and_answers_the_dashboards_queries(
        tmp_path: Path, serve: Callable[..., str], client_for: Callable[..., Any], prometheus_binary: str) -> None:
    ports = {job: _free_port() for job in ("orchestrator", "trainer", "sandboxes", "hub")}
    run = tmp_path / "run"
    run.mkdir()
    registry = CollectorRegistry()  # the orchestrator's, apart from this process's own (the sandboxes')
    env = vf.load_environment("reverse-text", num_train_examples=40, num_eval_examples=0)
    config = OrchestratorConfig(batch_size=8, rollouts_per_example=4, max_inflight_groups=2, max_tokens=24,
                                seq_len=512, weights_poll_s=0.05, max_async_level=1, coalesce_requests=False,
                                metrics=MetricsConfig(port=ports["orchestrator"]))
    orchestrator = Orchestrator(config, env, [client_for(serve(drop_and_reject_policy()))], [Updater()], run,
                                metrics=OrchestratorMetrics(registry))
    endpoint = serve_configured(config.metrics, registry)
    sandbox_endpoint = serve_metrics(ports["sandboxes"])
    sandboxes = LocalBackend(LocalBackendConfig(root_dir=Path("/var/tmp") / f"vf-prom-test-{os.getpid()}",
                                                warm_pool_size=1))
    client = AsyncSandboxClient(sandboxes)
    assert endpoint is not None
    try:
        with _process(_trainer_command(run, ports["trainer"]), tmp_path / "trainer.log",
                      {"OMP_NUM_THREADS": "1"}) as trainer, _hub(tmp_path, ports["hub"]) as (hub_url, token):
            async with _prometheus(prometheus_binary, tmp_path, ports) as prometheus:
                # work for every component to record
                await asyncio.wait_for(orchestrator.run(2), timeout=240)
                _validate_two_batches(registry)
                # this process's registry: other tests' sandboxes may have counted in it already
                ooms_before = REGISTRY.get_sample_value("vf_sandbox_oom_kills_total", {"scope": "command"}) or 0.0
                box = await client.create(CreateSandboxRequest(memory_gb=0.125))
                assert (await client.execute_command(box.id, "echo hi")).stdout == "hi\n"
                killed = await client.execute_command(box.id, "python3 -c 'b = bytearray(1 << 30)'", timeout=30)
                assert killed.oom_killed
                await _until(lambda: _hub_up(hub_url), "the Hub to start")
                await _hub_traffic(hub_url, token, tmp_path)
                await _until(lambda: (run / "weights" / "step_2").is_dir() or trainer.poll() is not None,
                             "the trainer's second step")
                assert trainer.poll() is None, _log_tail(tmp_path / "trainer.log")

                # every target up, and its newest values scraped
                for job in ports:
                    await _until(lambda job=job: _equals(prometheus, f'up{{job="{job}"}}', 1), f"{job} to be up")
                await _until(lambda: _equals(prometheus, 'vf_trainer_step{job="trainer"}', 2),
                             "the trainer's step 2 scraped")
                await _until(lambda: _equals(prometheus, 'sum(vf_hub_requests_total{job="hub", route="/health"})',
                                             HEALTH_CHECKS), "both Hub workers' health checks, added up")
                await _until(lambda: _equals(prometheus, 'vf_orchestrator_step_seconds_count{job="orchestrator"}',
                                             2),
                             "the orchestrator's two steps scraped")
                await _until(lambda: _equals(prometheus, 'vf_sandbox_oom_kills_total{job="sandboxes", scope="command"}',
                                             ooms_before + 1),
                             "the sandbox's OOM kill scraped")
                await _check_values(prometheus, ooms_before)
                await _check_dashboard(prometheus)
    finally:
        endpoint.close()
        sandbox_endpoint.close()
        await sandboxes.close()


async def _hub_up(url: str) -> bool:
    try:  # not /health, whose requests the test counts
        async with httpx.AsyncClient(timeout=2) as client:
            return (await client.get(f"{url}/simple/")).status_code == 200
    except httpx.TransportError:
        return False


async def _equals(prometheus: PrometheusAPI, expr: str, expected: float) -> bool:
    return await prometheus.value(expr) == expected


async def _check_values(prometheus: PrometheusAPI, ooms_before: float) -> None:
    value = prometheus.value
    # orchestrator: two batches of two groups; a failed rollout left its group incomplete; a uniform group
    assert (await value('vf_orchestrator_rollouts_total{job="orchestrator"}') or 0) >= 16
    assert await value('vf_orchestrator_off_policy_steps_count{job="orchestrator"}') == 4
    assert await value('vf_orchestrator_dropped_rollouts_total{job="orchestrator", reason="failed"}') == 1
    assert await value('vf_orchestrator_dropped_rollouts_total{job="orchestrator", reason="incomplete"}') == 3
    assert (await value('vf_orchestrator_rejected_rollouts_total{job="orchestrator", reason="uniform"}') or 0) >= 4
    assert await value('vf_orchestrator_step{job="orchestrator"}') == 1
    assert await value('vf_validator_batches_total{job="orchestrator", outcome="accepted"}') == 1
    assert await value('vf_validator_rejections_total{job="orchestrator", check="schema"}') == 1
    assert await value('vf_validator_seconds_count{job="orchestrator"}') == 2
    # trainer (rank 0)
    for name in ("vf_trainer_loss", "vf_trainer_mismatch_kl", "vf_trainer_grad_norm", "vf_trainer_tokens_per_second"):
        assert await value(f'{name}{{job="trainer"}}') is not None, name
    assert (await value('vf_trainer_tokens_total{job="trainer"}') or 0) > 0
    assert await value('vf_trainer_step_seconds_count{job="trainer"}') == 2
    # sandboxes: one handed out and alive, the pool refilled behind it
    assert await value('vf_sandbox_live{job="sandboxes"}') == 1
    assert (await value('sum(vf_sandbox_pool{job="sandboxes"})') or 0) >= 1
    assert (await value('vf_sandbox_create_seconds_count{job="sandboxes"}') or 0) >= 1
    assert (await value('vf_sandbox_exec_seconds_count{job="sandboxes", outcome="ok"}') or 0) >= 1
    assert await value('vf_sandbox_exec_seconds_count{job="sandboxes", outcome="oom_killed"}') == ooms_before + 1
    # Hub: both workers' counts, added up
    assert await value('sum(vf_hub_uploads_total{job="hub", outcome="created"})') == 1
    assert await value('sum(vf_hub_downloads_total{job="hub"})') == 2
    assert await value('sum(vf_hub_auth_failures_total{job="hub", reason="invalid"})') == 1
    assert await value('sum(vf_hub_request_duration_seconds_count{job="hub", route="/health"})') == HEALTH_CHECKS


async def _check_dashboard(prometheus: PrometheusAPI) -> None:
    """Every metric the dashboard names exists in Prometheus, and every panel's query returns data."""
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    assert exprs
    names = {name for expr in exprs for name in re.findall(r"\b(vf_[a-z_]+)", expr)}
    listed = (await prometheus.client.get("/api/v1/label/__name__/values")).json()["data"]
    assert names <= set(listed), sorted(names - set(listed))
    for expr in exprs:  # a rate needs two scrapes of a series: a new one may need a second more
        query = expr.replace("$__rate_interval", "1m")
        await _until(lambda query=query: prometheus.query(query), f"the dashboard's query {query} to return data",
                     timeout=15)
