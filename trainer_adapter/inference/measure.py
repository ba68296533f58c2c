"""Measure an inference server: time to ready, generation tokens/s, and weight-update latency idle and under load.

Run it in the venv that has vLLM (it starts the server itself)::

    .venv-vllm/bin/python -m trainer_adapter.inference.measure              # the tiny model, built in a temp dir
    .venv-vllm/bin/python -m trainer_adapter.inference.measure --model DIR --variant DIR2 --dtype bfloat16
    ... --json measure.json     # also the figures as a Measurement (scripts/gpu_smoke.sh's summary reads it)

Every request decodes exactly ``--max-tokens`` tokens (``ignore_eos``), so tokens/s does not depend on when
an untrained model happens to stop. Under load, each update is sent while all requests are decoding, and
the run fails unless every request still finishes with all its tokens.
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import tempfile
import time
from pathlib import Path
from typing import Annotated

import typer
from openai import AsyncOpenAI
from pydantic import BaseModel

from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer
from trainer_adapter.inference.weights_client import WeightsClient

MODEL = "measured"


class Measurement(BaseModel):
    """What one measurement found, as ``--json`` writes it."""

    model: str
    dtype: str
    ready_s: float
    requests: int
    max_tokens: int
    tokens_per_s: float
    tokens_per_s_with_updates: float
    update_idle_s: list[float]
    update_under_load_s: list[float]


async def _one_request(client: AsyncOpenAI, i: int, max_tokens: int) -> int:
    response = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": f"Request {i}: count upwards."}], max_tokens=max_tokens,
        temperature=1.0, extra_body={"ignore_eos": True, "min_tokens": max_tokens},
    )  # fmt: skip
    tokens = response.usage.completion_tokens if response.usage is not None else None
    if response.choices[0].finish_reason != "length" or tokens is None or tokens != max_tokens:
        raise RuntimeError(f"request {i} ended early: {response.choices[0].finish_reason}, {response.usage}")
    return tokens


async def generate_load(base_url: str, requests: int, max_tokens: int) -> tuple[int, float]:
    """Send ``requests`` chats at once; returns (completion tokens, seconds)."""
    async with AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=600) as client:
        start = time.perf_counter()
        tokens = await asyncio.gather(*(_one_request(client, i, max_tokens) for i in range(requests)))
        return sum(tokens), time.perf_counter() - start


async def update_latencies(base_url: str, dirs: list[str], rounds: int, delay: float = 0.0) -> list[float]:
    """Round-trip seconds of ``rounds`` updates, cycling through ``dirs``, each after ``delay`` seconds."""
    seconds = []
    async with WeightsClient(base_url) as weights:
        for i in range(rounds):
            await asyncio.sleep(delay)
            start = time.perf_counter()
            await weights.update(dirs[i % len(dirs)])
            seconds.append(time.perf_counter() - start)
        await weights.reload()
    return seconds


async def measure(server: InferenceServer, dirs: list[str], requests: int, max_tokens: int, rounds: int) -> dict:
    """Throughput alone, update latency alone, then both at once."""
    await generate_load(server.base_url, 2, 8)  # warm-up
    tokens, secs = await generate_load(server.base_url, requests, max_tokens)
    idle = await update_latencies(server.base_url, dirs, rounds)
    # Spread the updates over the first half of the load, so each lands while every request is decoding.
    load = asyncio.create_task(generate_load(server.base_url, requests, max_tokens))
    busy = await update_latencies(server.base_url, dirs, rounds, delay=secs / (2 * rounds))
    busy_tokens, busy_secs = await load
    return {
        "tokens/s": tokens / secs, "tokens": tokens, "seconds": secs,
        "update idle (s)": idle, "update under load (s)": busy, "tokens/s with updates": busy_tokens / busy_secs,
    }  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _summary(values: list[float]) -> str:
    return f"median {statistics.median(values):.3f}, max {max(values):.3f} (n={len(values)})"


def main(
    model: Annotated[Path | None, typer.Option(help="Model folder; default: the tiny test model.")] = None,
    variant: Annotated[Path | None, typer.Option(help="Second folder of the same shapes to update to.")] = None,
    dtype: Annotated[str, typer.Option(help="Server dtype.")] = "float32",
    requests: Annotated[int, typer.Option(help="Concurrent requests.")] = 32,
    max_tokens: Annotated[int, typer.Option(help="Tokens each request decodes.")] = 256,
    rounds: Annotated[int, typer.Option(help="Weight updates per phase.")] = 5,
    log: Annotated[Path | None, typer.Option(help="Where the server writes its log.")] = None,
    gpu_memory_utilization: Annotated[
        float | None, typer.Option(help="GPU only: vLLM's share of the GPU's memory; default: vLLM's.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the figures here (JSON).")] = None,
) -> None:
    """Print time to ready, tokens/s and update latency for one server started here."""
    with tempfile.TemporaryDirectory() as tmp:
        if model is None:
            from trainer_adapter.inference.testing_model import perturb_weights, save_tiny_model

            model = save_tiny_model(Path(tmp) / "base")
            variant = perturb_weights(model, Path(tmp) / "variant", seed=1)
        dirs = [str(variant or model), str(model)]
        # validated from a dict: --dtype is a plain string until the config checks it is one vLLM knows
        config = InferenceConfig.model_validate({
            "model": str(model), "port": _free_port(), "served_model_name": MODEL, "dtype": dtype,
            "max_num_seqs": max(requests, 1), "gpu_memory_utilization": gpu_memory_utilization,
        })  # fmt: skip
        start = time.perf_counter()
        with InferenceServer(config, log_path=log) as server:
            ready = time.perf_counter() - start
            result = asyncio.run(measure(server, dirs, requests, max_tokens, rounds))
    typer.echo(f"model                  {model} ({dtype})")
    typer.echo(f"ready after            {ready:.1f} s")
    typer.echo(f"generation             {result['tokens/s']:.0f} tokens/s ({requests} requests x {max_tokens} tokens)")
    typer.echo(f"with updates in flight {result['tokens/s with updates']:.0f} tokens/s, every request complete")
    typer.echo(f"update, idle           {_summary(result['update idle (s)'])} s")
    typer.echo(f"update, under load     {_summary(result['update under load (s)'])} s")
    if json_out is not None:
        found = Measurement(model=str(model), dtype=dtype, ready_s=ready, requests=requests, max_tokens=max_tokens,
                            tokens_per_s=result["tokens/s"], tokens_per_s_with_updates=result["tokens/s with updates"],
                            update_idle_s=result["update idle (s)"],
                            update_under_load_s=result["update under load (s)"])
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(found.model_dump_json(indent=2))


if __name__ == "__main__":
    typer.run(main)
