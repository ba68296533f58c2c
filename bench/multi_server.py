"""Rollouts/s over 1, 2 and 3 vLLM servers, dispatched as the orchestrator dispatches them.

Three vLLM-on-CPU servers start side by side on the tiny model (not timed). Each round then generates
``--groups`` groups of ``--per-group`` ``arithmetic`` rollouts (one ``env.generate`` per group, temperature 1,
logprobs and token ids, ``CoalescingClient`` on ``make_openai_client``: the orchestrator's clients) over the
first k servers, k = 1, 2, 3: continuous batching with ``--inflight-per-server`` groups in flight per server,
each new group sent to the next server by ``ServerPool.pick`` (the orchestrator's round robin). Rounds cycle
through k = 1, 2, 3 (the order reversed every other repeat), each on new rows after one untimed warm-up round
per k; the table shows the median rollouts/s per k over ``--repeats`` and the ratio to one server.

On a machine with fewer cores than servers the servers share the cores, so the figures measure the CPU,
not the scaling a GPU per server gives.

    .venv/bin/python bench/multi_server.py                 # 3 repeats, 48 groups x 8 rollouts a round
    .venv/bin/python bench/multi_server.py --repeats 1     # smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import verifiers as vf
from trainer_adapter.inference.testing_model import save_tiny_model
from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer
from trainer_adapter.inference.weights_client import WeightsClient
from trainer_adapter.orchestrator.servers import ServerPool
from trainer_adapter.train.launch import free_port
from verifiers.clients import CoalescingClient
from verifiers.http import make_openai_client

ROOT = Path(__file__).resolve().parents[1]
SAMPLING = {"temperature": 1.0, "max_tokens": 8, "logprobs": True, "extra_body": {"return_token_ids": True}}
COUNTS = (1, 2, 3)


async def _round(env: Any, clients: list[Any], admins: list[WeightsClient], rows: list[Any], per_group: int,
                 inflight: int) -> float:
    """Rollouts/s of ``rows`` (one group each) over ``clients``, ``inflight`` groups at a time."""
    pool = ServerPool(admins)
    pending = list(rows)
    running: set[asyncio.Task[Any]] = set()
    started = time.perf_counter()
    while pending or running:
        while pending and len(running) < inflight:
            client = clients[pool.pick() or 0]  # every server is up: pick() is never None here
            running.add(asyncio.create_task(env.generate([pending.pop()] * per_group, client, "tiny", SAMPLING)))
        done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()
    return len(rows) * per_group / (time.perf_counter() - started)


async def _bench(args: argparse.Namespace, urls: list[str]) -> dict[int, list[float]]:
    env = vf.load_environment("arithmetic", num_train_examples=args.groups * (args.repeats + 1) * len(COUNTS) * 2,
                              num_eval_examples=0)
    rows = [dict(r) for r in env.get_dataset()]
    clients = [CoalescingClient(make_openai_client(url, api_key="local", max_retries=3)) for url in urls]
    admins = [WeightsClient(url) for url in urls]
    taken = 0

    def fresh() -> list[Any]:
        nonlocal taken
        taken += args.groups
        return rows[taken - args.groups:taken]

    results: dict[int, list[float]] = {k: [] for k in COUNTS}
    for k in COUNTS:  # warm-up: compiled kernels and connections for every server count
        await _round(env, clients[:k], admins[:k], fresh(), args.per_group, args.inflight_per_server * k)
    for repeat in range(args.repeats):
        for k in COUNTS if repeat % 2 == 0 else tuple(reversed(COUNTS)):
            rate = await _round(env, clients[:k], admins[:k], fresh(), args.per_group, args.inflight_per_server * k)
            results[k].append(rate)
            print(f"repeat {repeat}: {k} server(s) {rate:.1f} rollouts/s", flush=True)
    for admin in admins:
        await admin.aclose()
    for client in clients:
        await client.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=48, help="Groups per round.")
    parser.add_argument("--per-group", type=int, default=8, help="Rollouts per group.")
    parser.add_argument("--inflight-per-server", type=int, default=8, help="Groups in flight per server.")
    parser.add_argument("--repeats", type=int, default=3, help="Timed rounds per server count.")
    parser.add_argument("--python", default=str(ROOT / ".venv-vllm" / "bin" / "python"),
                        help="Interpreter with vLLM.")
    args = parser.parse_args()
    for name in ("groups", "per_group", "inflight_per_server", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    with tempfile.TemporaryDirectory() as tmp:
        model = save_tiny_model(Path(tmp) / "base")
        servers = [InferenceServer(InferenceConfig(model=str(model), served_model_name="tiny", port=free_port(),
                                                   max_num_seqs=64), python=args.python,
                                   log_path=Path(tmp) / f"inference_{i}.log") for i in range(max(COUNTS))]
        try:
            started = time.perf_counter()
            for server in servers:
                server.launch()
            for server in servers:
                server.wait_ready(600)
            print(f"{len(servers)} servers ready after {time.perf_counter() - started:.0f} s "
                  f"({os.cpu_count()} cores)", flush=True)
            results = asyncio.run(_bench(args, [s.base_url for s in servers]))
        finally:
            for server in servers:
                server.stop()
    one = statistics.median(results[1])
    print("\n| servers | rollouts/s (median) | vs 1 server |\n|---|---|---|")
    for k in COUNTS:
        rate = statistics.median(results[k])
        print(f"| {k} | {rate:.1f} | {rate / one:.2f}x |")


if __name__ == "__main__":
    main()
