"""Full fine-tuning vs LoRA on the real model: the main job run twice, the same steps, side by side.

Each side is ``vf-train main configs/main_job/main.toml`` (SmolLM2-135M-Instruct, RL on reverse-text letters,
vLLM on CPU, the asynchronous orchestrator) with the same seed and steps; the LoRA side adds
``--rl.lora.enabled true`` and its own learning rate (adapters want a larger one). From each job's files:

- s/step: the median of the RL trainer's ``time/step`` (its wait for the batch included: what a step costs the
  run) and of its busy time (the wait excluded);
- peak memory: the trainer rank's peak resident set (``memory/peak_rss_mb``);
- the held-out gain: ``after - before`` of the job's own ``vf-eval`` measurements, and the job's wall time.

    .venv/bin/python bench/lora.py                          # 14 steps each (the main job's)
    .venv/bin/python bench/lora.py --steps 6 --seed 1 --lora-lr 3e-4 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def run_job(name: str, out: Path, steps: int, seed: int, extra: list[str]) -> dict[str, Any]:
    """One main job; returns its figures."""
    folder = out / name
    command = [sys.executable, "-m", "trainer_adapter.cli.vf_train", "main", "configs/main_job/main.toml",
               "--output-dir", str(folder), "--rl.steps", str(steps), "--seed", str(seed), *extra]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        tail = done.stdout[-2000:] + done.stderr[-2000:]
        raise SystemExit(f"{name}: the job failed (exit {done.returncode}):\n{tail}")
    summary = json.loads((folder / "summary.json").read_text())
    trainer = [json.loads(line) for line in (folder / "rl" / "trainer_metrics.jsonl").read_text().splitlines()]
    steady = trainer[1:] or trainer  # the first step waits for the first batch, a start-up cost
    return {
        "name": name, "before": summary["before"], "after": summary["after"],
        "gain": summary["after"] - summary["before"], "greedy": [summary["greedy_before"], summary["greedy_after"]],
        "s_per_step": statistics.median(m["time/step"] for m in steady),
        "busy_s_per_step": statistics.median(m["time/step"] - m["time/wait_for_batch"] for m in steady),
        "peak_rss_mb": max(m.get("memory/peak_rss_mb", 0.0) for m in trainer),
        "mismatch_kl_max": summary["mismatch_kl"].get("max"), "rl_seconds": summary["seconds"]["rl"],
        "wall_s": wall, "command": command,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=14)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lora-lr", type=float, default=3e-4, help="The LoRA side's learning rate.")
    parser.add_argument("--lora-rank", type=int, default=16)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench_lora"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    lora = ["--rl.lora.enabled", "true", "--rl.lora.rank", str(args.lora_rank), "--rl.lr", str(args.lora_lr)]
    sides = [run_job("full", args.out, args.steps, args.seed, []),
             run_job("lora", args.out, args.steps, args.seed, lora)]
    print(f"{args.steps} RL steps each, seed {args.seed}; LoRA rank {args.lora_rank} on every projection, "
          f"lr {args.lora_lr}")
    print("| side | s/step (busy) | peak RSS MiB | held-out before -> after (gain) | greedy | mismatch KL | job s |")
    print("|---|---|---|---|---|---|---|")
    for s in sides:
        print(f"| {s['name']} | {s['s_per_step']:.1f} ({s['busy_s_per_step']:.1f}) | {s['peak_rss_mb']:.0f} | "
              f"{s['before']:.3f} -> {s['after']:.3f} ({s['gain']:+.3f}) | "
              f"{s['greedy'][0]:.2f} -> {s['greedy'][1]:.2f} | {s['mismatch_kl_max']:.3f} | {s['wall_s']:.0f} |")
    full, adapted = sides
    print(f"LoRA / full: s/step {adapted['s_per_step'] / full['s_per_step']:.2f}x, "
          f"peak RSS {adapted['peak_rss_mb'] / full['peak_rss_mb']:.2f}x, gain {adapted['gain']:+.3f} vs "
          f"{full['gain']:+.3f}")
    if args.json:
        args.json.write_text(json.dumps(sides, indent=2))


if __name__ == "__main__":
    main()
