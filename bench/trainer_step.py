"""Where an SFT step of the trainer spends its time: forward+backward, gradient clipping, the AdamW step.

Runs the trainer's own code (``init_distributed``, ``shard_model``, the SFT step, ``clip_gradients``) on
one rank, for AdamW's per-parameter loop (``foreach=False``, what ``build_optimizer`` picks for FSDP2's
DTensors) and its multi-tensor path (``foreach=True``), side by side in one process, then prints a
``torch.profiler`` table of a few steps. On a GPU it answers whether the 104M model's SFT step
(docs/gpu.md: 0.26 s on an H200) is the optimizer, the hooks or the matrix work::

    python bench/trainer_step.py --rows outputs/gpu_check/train.jsonl             # the 104M shape
    python bench/trainer_step.py --rows ROWS --shape 2,64,2,1,128 --steps 5       # a CPU smoke run

``--rows`` is a prompt/completion JSONL (``python -m trainer_adapter.gpu_trainer_check prepare`` writes one).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainer_adapter.model.config import ModelConfig  # noqa: E402
from trainer_adapter.model.tiny import load_model  # noqa: E402
from trainer_adapter.train.distributed import init_distributed, shard_model  # noqa: E402
from trainer_adapter.train.optimizer import clip_gradients  # noqa: E402
from trainer_adapter.train.sft import _train_step  # noqa: E402
from trainer_adapter.train.sft_data import SFTDataConfig, load_rows, step_samples, tokenize  # noqa: E402


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(fn: Callable[[], object], device: torch.device) -> float:
    _sync(device)
    start = time.perf_counter()
    fn()
    _sync(device)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=Path, required=True, help="prompt/completion JSONL")
    parser.add_argument("--shape", default="12,768,12,4,3072", help="layers,hidden,heads,kv_heads,mlp (104M)")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per variant (after 5 warm-up steps)")
    parser.add_argument("--precision", default="auto", choices=["auto", "float32", "bfloat16"])
    args = parser.parse_args()
    layers, hidden, heads, kv, mlp = (int(x) for x in args.shape.split(","))
    world = init_distributed(args.precision)
    shape = ModelConfig(num_layers=layers, hidden_size=hidden, num_heads=heads, num_kv_heads=kv, intermediate_size=mlp)
    model, tokenizer = load_model(shape)
    samples = [tokenize(tokenizer, *row) for row in load_rows(SFTDataConfig(path=args.rows))]
    shard_model(model, world)
    print(f"device {world.device} | compute {world.compute_dtype} | torch {torch.__version__} | "
          f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters", flush=True)
    step = 0
    for foreach in (False, True):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, foreach=foreach)
        figures: dict[str, list[float]] = {"forward+backward": [], "clip": [], "optimizer": [], "step": []}
        for i in range(5 + args.steps):
            batch = step_samples(samples, args.batch_size, step, 0)
            step += 1
            parts = {
                "forward+backward": _timed(lambda b=batch: _train_step(model, b, 2048, world), world.device),
                "clip": _timed(lambda: clip_gradients(model, 1.0), world.device),
                "optimizer": _timed(optimizer.step, world.device),
            }
            optimizer.zero_grad(set_to_none=True)
            if i >= 5:
                for key, value in parts.items():
                    figures[key].append(value)
                figures["step"].append(sum(parts.values()))
        medians = " | ".join(f"{k} {statistics.median(v) * 1000:.1f} ms" for k, v in figures.items())
        print(f"AdamW foreach={foreach}: median of {args.steps}: {medians}", flush=True)
    activities = [torch.profiler.ProfilerActivity.CPU]
    if world.device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as profile:
        for _ in range(3):
            _train_step(model, step_samples(samples, args.batch_size, step, 0), 2048, world)
            clip_gradients(model, 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
        _sync(world.device)
    sort = "cuda_time_total" if world.device.type == "cuda" else "cpu_time_total"
    print(profile.key_averages().table(sort_by=sort, row_limit=18, max_name_column_width=60), flush=True)
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
