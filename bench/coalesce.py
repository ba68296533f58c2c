"""A group's rollouts as one request with ``n`` replies, against one request per rollout, on real vLLM.

One RL step of the main job, as the orchestrator issues it: ``--groups`` examples of the ``arithmetic``
environment, ``--per-group`` rollouts each, every group one ``env.generate`` call, all groups at once,
at temperature 1 with logprobs and token ids. The peer is the same calls on a plain ``AsyncOpenAI``
client (one request per rollout); ours wraps it in ``verifiers.CoalescingClient``. Rounds alternate
between the two on one server (started once, not timed; a warm-up round first), each round on new rows;
the table shows the median seconds per round and the ratio of medians.

    .venv/bin/python bench/coalesce.py                      # the tiny model built from seed 0, 4 rounds each
    .venv/bin/python bench/coalesce.py --model DIR          # a trained folder (the main job's SFT weights)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI

import verifiers as vf
from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer
from trainer_adapter.model.config import ModelConfig
from trainer_adapter.model.tiny import load_model
from trainer_adapter.train.export import write_hf_folder
from trainer_adapter.train.launch import free_port

ROOT = Path(__file__).resolve().parents[1]
SAMPLING = {"temperature": 1.0, "max_tokens": 8, "logprobs": True, "extra_body": {"return_token_ids": True}}


async def _round(env: Any, client: Any, rows: list[Any], per_group: int) -> float:
    started = time.perf_counter()
    await asyncio.gather(*(env.generate([row] * per_group, client, "m", SAMPLING) for row in rows))
    return time.perf_counter() - started


async def _compare(base_url: str, groups: int, per_group: int, rounds: int) -> dict[str, list[float]]:
    env = vf.load_environment("arithmetic")
    dataset = env.get_dataset()
    batches = [[dataset[(k * groups + i) % len(dataset)] for i in range(groups)] for k in range(2 * rounds + 1)]
    async with AsyncOpenAI(base_url=base_url, api_key="local", max_retries=0) as plain:
        clients = {"one request per rollout": plain, "CoalescingClient": vf.CoalescingClient(plain)}
        await _round(env, plain, batches[0], per_group)  # warm-up: connections, prefix cache, the engine
        times: dict[str, list[float]] = {name: [] for name in clients}
        for k in range(rounds):
            order = list(clients) if k % 2 == 0 else list(reversed(clients))
            for j, name in enumerate(order):
                times[name].append(await _round(env, clients[name], batches[1 + 2 * k + j], per_group))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="Model folder to serve (default: the tiny model, seed 0).")
    parser.add_argument("--groups", type=int, default=64, help="Examples per round (the main job's 64).")
    parser.add_argument("--per-group", type=int, default=8, help="Rollouts per example (the main job's 8).")
    parser.add_argument("--rounds", type=int, default=4, help="Rounds per client.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if model is None:
            built, tokenizer = load_model(ModelConfig(num_layers=4, seed=0))
            model = write_hf_folder(built.state_dict(), built, tokenizer, Path(tmp) / "tiny")
        config = InferenceConfig(model=str(model), served_model_name="m", port=free_port(),
                                 max_num_seqs=max(args.groups * args.per_group, 1))
        with InferenceServer(config, python=ROOT / ".venv-vllm" / "bin" / "python",
                             log_path=Path(tmp) / "vllm.log").start(600) as server:
            times = asyncio.run(_compare(server.base_url, args.groups, args.per_group, args.rounds))
    rollouts = args.groups * args.per_group
    print(f"{args.groups} groups x {args.per_group} rollouts = {rollouts} per round, {args.rounds} rounds each")
    print(f"{'client':<26}{'median s':>10}{'rollouts/s':>12}   rounds")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<26}{median:>10.2f}{rollouts / median:>12.0f}   {' '.join(f'{v:.2f}' for v in values)}")
    plain, merged = (statistics.median(v) for v in times.values())
    print(f"ratio (one request per rollout / CoalescingClient): {plain / merged:.2f}x")


if __name__ == "__main__":
    main()
