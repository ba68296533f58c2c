"""Synchronous vs asynchronous RL: wall time and trainer idle fraction for N steps, side by side.

Both modes run the same ``vf-train rl`` config (the tiny model, real vLLM on CPU, the FSDP2
trainer, the orchestrator) on ``bench/envs/long_tail.py``, whose rollouts are mostly one model
turn and sometimes ``--long-turns``; they differ only in how the orchestrator schedules:

* ``sync``: ``max_async_level = 0`` and ``continuous_batching = false`` — each step's groups are
  dispatched once the previous step's weights are loaded, and the batch waits for its slowest group.
* ``async``: ``max_async_level = --async-level`` (2) and continuous batching — groups keep generating
  while the trainer trains and while new weights are loaded into the server (in-flight updates).

One vLLM server is started once and shared by every run (each run first loads the initial weights
into it), so server start-up is not timed. Modes alternate within each repeat (sync first in even
repeats); the table shows medians over repeats, and the speedup is the median of per-repeat ratios.
Per run, from the trainer's own metrics (``trainer_metrics.jsonl``):

* wall: the trainer loop's time for the N steps (Σ ``time/step``);
* idle: Σ ``time/wait_for_batch`` / wall (the trainer waiting for batches); ``idle>1`` leaves out the
  first step, whose batch nothing can overlap.

    .venv/bin/python bench/async_rl.py                       # 3 repeats of 10 steps, ~15 min
    .venv/bin/python bench/async_rl.py --steps 4 --repeats 1 # smoke run
    .venv/bin/python bench/async_rl.py --from-json out.json  # the table of a saved run
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ENVS = ROOT / "bench" / "envs"
MODEL_NAME = "tiny"


@dataclass(frozen=True)
class Mode:
    """How the orchestrator schedules in one column of the table."""

    name: str
    max_async_level: int
    continuous_batching: bool


def modes(async_level: int) -> list[Mode]:
    return [Mode("sync", 0, False), Mode("async", async_level, True)]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {value}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=_positive, default=10, help="trainer steps per run")
    parser.add_argument("--repeats", type=_positive, default=3, help="runs of each mode (alternating order)")
    parser.add_argument("--batch-size", type=_positive, default=32, help="rollouts per step")
    parser.add_argument("--rollouts-per-example", type=_positive, default=4, help="rollouts per group")
    parser.add_argument("--max-inflight-groups", type=_positive, default=16, help="groups generating at once")
    parser.add_argument("--async-level", type=_positive, default=2, help="max_async_level of the async mode")
    parser.add_argument("--max-tokens", type=_positive, default=16, help="tokens per model turn")
    parser.add_argument("--long-fraction", type=_fraction, default=0.1, help="share of examples that are long")
    parser.add_argument("--long-turns", type=_positive, default=8, help="model turns of a long example")
    parser.add_argument("--vllm-python", type=Path, default=ROOT / ".venv-vllm" / "bin" / "python",
                        help="interpreter that has vLLM")
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "bench_async_rl", help="run folders")
    parser.add_argument("--json", type=Path, help="also write the runs and the summary here")
    parser.add_argument("--from-json", type=Path, help="print the table of a saved --json file; run nothing")
    args = parser.parse_args(argv)
    if args.batch_size % args.rollouts_per_example:
        parser.error("--batch-size must be a multiple of --rollouts-per-example")
    if args.rollouts_per_example < 2:
        parser.error("--rollouts-per-example must be >= 2 (advantages need a group)")
    return args


def run_config(args: argparse.Namespace, mode: Mode, out: Path, url: str) -> str:
    """The ``vf-train rl`` TOML of one run: everything equal between modes but the two scheduling fields."""
    return f"""max_steps = {args.steps}
output_dir = "{out}"
[env]
id = "long-tail"
args = {{long_fraction = {args.long_fraction}, long_turns = {args.long_turns}}}
[orchestrator]
model_name = "{MODEL_NAME}"
batch_size = {args.batch_size}
rollouts_per_example = {args.rollouts_per_example}
max_inflight_groups = {args.max_inflight_groups}
max_tokens = {args.max_tokens}
max_async_level = {mode.max_async_level}
continuous_batching = {str(mode.continuous_batching).lower()}
[inference]
urls = ["{url}"]
[trainer.optimizer]
lr = 1e-4
warmup_steps = 0
"""


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def measure(out: Path) -> dict[str, float]:
    """Figures of one finished run from its metrics files."""
    trainer = _lines(out / "trainer_metrics.jsonl")
    orchestrator = _lines(out / "orchestrator_metrics.jsonl")
    steps = [t["time/step"] for t in trainer]
    waits = [t["time/wait_for_batch"] for t in trainer]
    last = orchestrator[-1]
    return {
        "wall_s": sum(steps),
        "idle": sum(waits) / sum(steps),
        "idle_after_first": sum(waits[1:]) / sum(steps[1:]) if len(steps) > 1 else 0.0,
        "train_s_per_step": statistics.median(s - w for s, w in zip(steps, waits)),
        "trained_tokens_per_s": sum(t["trainable_tokens"] for t in trainer) / sum(steps),
        "update_s_per_step": sum(o.get("time/update_weights", 0.0) for o in orchestrator) / len(orchestrator),
        "reward": sum(o["reward"] for o in orchestrator) / len(orchestrator),
        "off_policy_mean": sum(o["off_policy_mean"] for o in orchestrator) / len(orchestrator),
        "stale_or_cancelled": float(last.get("stale_groups", 0) + last.get("cancelled_groups", 0)),
    }


def run_once(args: argparse.Namespace, mode: Mode, repeat: int, url: str) -> dict[str, Any]:
    out = (args.out / f"r{repeat}-{mode.name}").resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    config = out / "rl.toml"
    config.write_text(run_config(args, mode, out, url))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ENVS), os.environ.get("PYTHONPATH")]))}
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "trainer_adapter.cli.vf_train", "rl", str(config)], cwd=ROOT,
                            env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"{mode.name} run {repeat} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return {"mode": mode.name, "repeat": repeat, "command_s": elapsed, **measure(out)}


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians per mode, and medians over repeats of the async/sync ratios (wall time, trained tokens/s).

    Both ratios are shown because a short async run trains a little less: long groups that are
    still generating when it ends are never trained, while every sync batch waits for its own.
    """
    by_mode: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        by_mode.setdefault(run["mode"], []).append(run)
    medians = {
        mode: {key: statistics.median(r[key] for r in rows) for key in rows[0] if key not in ("mode", "repeat")}
        for mode, rows in by_mode.items()
    }
    by_key = {(r["mode"], r["repeat"]): r for r in runs}
    pairs = [(by_key[("sync", i)], by_key[("async", i)]) for m, i in by_key if m == "sync" and ("async", i) in by_key]
    ratios = [s["wall_s"] / a["wall_s"] for s, a in pairs]
    token_ratios = [a["trained_tokens_per_s"] / s["trained_tokens_per_s"] for s, a in pairs]
    return {"medians": medians, "speedups": ratios, "speedup": statistics.median(ratios) if ratios else None,
            "token_speedups": token_ratios,
            "token_speedup": statistics.median(token_ratios) if token_ratios else None}


ROWS = [
    ("trainer wall for N steps (s)", "wall_s", "{:.1f}"),
    ("trainer idle (waiting for batches)", "idle", "{:.0%}"),
    ("trainer idle after step 1", "idle_after_first", "{:.0%}"),
    ("trainer compute per step (s)", "train_s_per_step", "{:.2f}"),
    ("trained tokens / trainer wall (tok/s)", "trained_tokens_per_s", "{:.0f}"),
    ("weight update time per step (s)", "update_s_per_step", "{:.2f}"),
    ("whole command incl. trainer start (s)", "command_s", "{:.1f}"),
    ("mean reward", "reward", "{:.3f}"),
    ("mean off-policy steps", "off_policy_mean", "{:.2f}"),
    ("stale + cancelled groups", "stale_or_cancelled", "{:.0f}"),
]


def format_table(report: dict[str, Any]) -> str:
    """Side-by-side table of a report (``{"settings", "runs", "summary", "load"}``)."""
    summary = report["summary"]
    medians = summary["medians"]
    lines = ["| median | sync (k=0) | async (k={}) |".format(report["settings"].get("async_level", "?")),
             "|---|---|---|"]
    for label, key, fmt in ROWS:
        cells = [fmt.format(medians[m][key]) if m in medians else "—" for m in ("sync", "async")]
        lines.append(f"| {label} | {cells[0]} | {cells[1]} |")
    if summary["speedup"] is not None:
        per = ", ".join(f"{r:.2f}" for r in summary["speedups"])
        lines.append(f"\nspeedup (sync wall / async wall, median of {len(summary['speedups'])}): "
                     f"{summary['speedup']:.2f}x  [{per}]")
    if summary.get("token_speedup") is not None:
        per = ", ".join(f"{r:.2f}" for r in summary["token_speedups"])
        lines.append(f"speedup in trained tokens/s (async / sync, median of {len(summary['token_speedups'])}): "
                     f"{summary['token_speedup']:.2f}x  [{per}]")
    load = report.get("load")
    if load:
        lines.append(f"load average before / after: {load['before']} / {load['after']}")
    return "\n".join(lines)


def start_server(args: argparse.Namespace) -> Any:
    from trainer_adapter.inference.testing_model import save_tiny_model
    from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer
    from trainer_adapter.train.launch import free_port

    if not args.vllm_python.exists():
        raise SystemExit(f"no vLLM interpreter at {args.vllm_python}: run bash scripts/setup_vllm_cpu.sh")
    model = save_tiny_model(args.out / "base_model")
    config = InferenceConfig(model=str(model), served_model_name=MODEL_NAME, port=free_port(), max_model_len=1024,
                             max_num_seqs=128)
    server = InferenceServer(config, python=args.vllm_python, log_path=args.out / "inference.log", die_with_parent=True)
    return server.start(timeout=600)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.from_json:
        print(format_table(json.loads(args.from_json.read_text())))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    report: dict[str, Any] = {"settings": settings, "runs": [], "load": {"before": os.getloadavg()}}
    server = start_server(args)
    try:
        for repeat in range(args.repeats):
            order = modes(args.async_level) if repeat % 2 == 0 else modes(args.async_level)[::-1]
            for mode in order:
                run = run_once(args, mode, repeat, server.base_url)
                print(f"repeat {repeat} {mode.name}: wall {run['wall_s']:.1f} s, idle {run['idle']:.0%}", flush=True)
                report["runs"].append(run)
    finally:
        server.stop()
    report["load"]["after"] = os.getloadavg()
    report["load"] = {k: " ".join(f"{x:.1f}" for x in v) for k, v in report["load"].items()}
    report["modes"] = [asdict(m) for m in modes(args.async_level)]
    report["summary"] = summarize(report["runs"])
    print(format_table(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
