"""What checking every group costs a run: the orchestrator on a real vLLM server, validation off vs on.

One vLLM-on-CPU server starts on the tiny model (float32; not timed). Each round runs the orchestrator for
``--steps`` batches of ``--batch-size`` ``arithmetic`` rollouts (groups of ``--per-group``, the production
clients) against a stand-in trainer that publishes every version as other weights (the base with seeded noise)
at once, so rollouts, not training, set the pace. Rounds alternate off and on (the order flipped every repeat)
after one untimed warm-up of each; with validation on, every group's turns go to the server's
``/commitment`` and a validator thread prefills them with the weights of the version the server names.

Printed: rollouts/s per round and the medians, the validator's seconds per group (``vf_validator_seconds``),
the share of groups checked in full (the rest straddled a weight update), and any rejection (an honest server
should have none).

    .venv/bin/python bench/rl_validation.py                # 3 repeats, 6 steps of 64 rollouts a round
    .venv/bin/python bench/rl_validation.py --repeats 1 --steps 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

import verifiers as vf
from trainer_adapter.inference.testing_model import perturb_weights, save_tiny_model
from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer
from trainer_adapter.inference.weights_client import WeightsClient
from trainer_adapter.orchestrator.buffer import BufferConfig
from trainer_adapter.orchestrator.metrics import OrchestratorMetrics
from trainer_adapter.orchestrator.orchestrator import Orchestrator, OrchestratorConfig
from trainer_adapter.orchestrator.validation import GroupValidator, ValidationConfig
from trainer_adapter.train.launch import free_port
from trainer_adapter.transport import step_dir
from trainer_adapter.validate.metrics import ValidatorMetrics
from verifiers.clients import CoalescingClient
from verifiers.http import make_openai_client

ROOT = Path(__file__).resolve().parents[1]


async def _trainer(out: Path, base: Path, steps: int) -> None:
    """Publish version n+1 as soon as batch n is written: other weights every step."""
    for step in range(steps):
        while not step_dir(out, step).is_dir():
            await asyncio.sleep(0.01)
        tmp = perturb_weights(base, out / "weights" / f".step_{step + 1}.tmp", seed=step + 1, scale=0.05)
        tmp.rename(out / "weights" / f"step_{step + 1}")


async def _round(args: argparse.Namespace, url: str, base: Path, out: Path, validate: bool,
                 env: Any) -> dict[str, Any]:
    (out / "weights").mkdir(parents=True)
    config = OrchestratorConfig(
        model_name="tiny", batch_size=args.batch_size, rollouts_per_example=args.per_group,
        max_inflight_groups=args.inflight, max_tokens=args.max_tokens, max_async_level=1, seed=len(str(out)),
        buffer=BufferConfig(drop_uniform_groups=False), validation=ValidationConfig(enabled=validate),
    )  # fmt: skip
    client = CoalescingClient(make_openai_client(url, api_key="local", max_retries=3))
    admin, source = WeightsClient(url), WeightsClient(url)
    await admin.update(str(base))  # every round starts on the same weights
    registry = CollectorRegistry()
    validator = None
    if validate:
        validator = GroupValidator(config.validation, [source], temperature=config.temperature,
                                   max_tokens=config.max_tokens, keep_versions=config.max_off_policy_steps + 1,
                                   metrics=ValidatorMetrics(registry))
    orchestrator = Orchestrator(config, env, [client], [admin], out, weight_dir=str(base), validator=validator,
                                metrics=OrchestratorMetrics(CollectorRegistry()))
    trainer = asyncio.create_task(_trainer(out, base, args.steps))
    started = time.perf_counter()
    try:
        await orchestrator.run(args.steps)
        seconds = time.perf_counter() - started
        await trainer
    finally:
        if validator is not None:
            validator.close()
        await admin.aclose()
        await source.aclose()
        await client.close()
    counts = orchestrator.counts
    checked = registry.get_sample_value("vf_validator_seconds_count") or 0
    return {
        "validate": validate, "rollouts_per_s": args.steps * args.batch_size / seconds, "seconds": seconds,
        "groups_generated": counts["validated_groups"] if validate else None,
        "validator_s_per_group": (registry.get_sample_value("vf_validator_seconds_sum") or 0) / max(checked, 1),
        "full_share": 1 - counts["commitment_only_groups"] / max(counts["validated_groups"], 1),
        "rejected": counts["invalid_groups"],
    }  # fmt: skip


async def _bench(args: argparse.Namespace, url: str, base: Path, tmp: Path) -> list[dict[str, Any]]:
    rounds = 2 * (args.repeats + 1)
    env = vf.load_environment("arithmetic", num_train_examples=2000, num_eval_examples=0)
    results: list[dict[str, Any]] = []
    for i in range(rounds):
        repeat = i // 2 - 1  # -1: the warm-up pair
        validate = (i % 2 == 0) == (repeat % 2 == 0)  # alternate, flipping the order every repeat
        result = await _round(args, url, base, tmp / f"round_{i}", validate, env)
        label = "warm-up" if repeat < 0 else f"repeat {repeat}"
        print(f"{label}: validation {'on ' if validate else 'off'} {result['rollouts_per_s']:.1f} rollouts/s"
              + (f", validator {result['validator_s_per_group'] * 1000:.0f} ms/group, full checks "
                 f"{result['full_share']:.0%}, rejected {result['rejected']}" if validate else ""), flush=True)
        if repeat >= 0:
            results.append(result)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=6, help="Batches per round.")
    parser.add_argument("--batch-size", type=int, default=64, help="Rollouts per batch.")
    parser.add_argument("--per-group", type=int, default=8, help="Rollouts per group.")
    parser.add_argument("--inflight", type=int, default=8, help="Groups in flight.")
    parser.add_argument("--max-tokens", type=int, default=32, help="Longest completion, in tokens.")
    parser.add_argument("--repeats", type=int, default=3, help="Timed rounds each way.")
    parser.add_argument("--json", type=Path, help="Also write every round's figures here.")
    parser.add_argument("--python", default=str(ROOT / ".venv-vllm" / "bin" / "python"),
                        help="Interpreter with vLLM.")
    args = parser.parse_args()
    for name in ("steps", "batch_size", "per_group", "inflight", "max_tokens", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.batch_size % args.per_group:
        parser.error("--batch-size must be a multiple of --per-group")
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        base = save_tiny_model(tmp / "base")
        server = InferenceServer(InferenceConfig(model=str(base), served_model_name="tiny", port=free_port()),
                                 python=args.python, log_path=tmp / "inference.log")
        try:
            started = time.perf_counter()
            server.launch()
            server.wait_ready(600)
            print(f"server ready after {time.perf_counter() - started:.0f} s ({os.cpu_count()} cores)", flush=True)
            results = asyncio.run(_bench(args, server.base_url, base, tmp))
        finally:
            server.stop()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    off = statistics.median(r["rollouts_per_s"] for r in results if not r["validate"])
    on = [r for r in results if r["validate"]]
    rate = statistics.median(r["rollouts_per_s"] for r in on)
    print("\n| validation | rollouts/s (median) | vs off | validator ms/group | groups checked in full | rejected |")
    print("|---|---|---|---|---|---|")
    print(f"| off | {off:.1f} | 1.00x | - | - | - |")
    per_group = statistics.median(r["validator_s_per_group"] for r in on) * 1000
    full = statistics.median(r["full_share"] for r in on)
    print(f"| on | {rate:.1f} | {rate / off:.2f}x | {per_group:.0f} | {full:.0%} | {sum(r['rejected'] for r in on)} |")


if __name__ == "__main__":
    main()
