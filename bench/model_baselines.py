"""Every bundled environment evaluated on a real model before any training, beside an echo policy's floor.

The model is a prepared catalog model (``vf-train model prepare``) served by vLLM on CPU through
``vf-train serve``'s settings (float32, the ``hermes`` tool parser, the project's chat template); each
environment is run by ``vf-eval`` as a user would. The peer in the same run is the project's scripted server
replying with the user's message (``--policy echo``): what an environment gives a model that does nothing.

    .venv/bin/python bench/model_baselines.py                       # every environment, greedy
    .venv/bin/python bench/model_baselines.py --envs reverse-text gsm8k -n 10 --json out.json

Prints one Markdown row per environment: its score, the echo floor, completion tokens, tokens/s, wall time and
the ``vf-eval`` command (its base URL is the run's own server).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer  # noqa: E402
from trainer_adapter.model.prepare import prepare_model  # noqa: E402
from trainer_adapter.train.launch import free_port  # noqa: E402
from verifiers.testing import ScriptedServer  # noqa: E402

# (environment id, examples, extra vf-eval arguments): small enough for a 2-core machine, one greedy reply each
ENVIRONMENTS: list[tuple[str, int, list[str]]] = [
    ("reverse-text", 20, []),
    ("reverse-text", 20, ["-a", '{"kind": "letters", "min_len": 4, "max_len": 7}']),
    ("arithmetic", 20, ["-a", '{"system_prompt": "Add the numbers. Reply with the sum only."}']),
    ("gsm8k", 20, []),
    ("math500", 20, []),
    ("science", 20, []),
    ("logic", 20, []),
    ("multiply-tool", 20, []),
    ("code_problems", 10, []),
    ("humaneval", 10, []),
    ("deep-research", 10, []),
    ("swe", 4, []),
]


def vf_eval(env_id: str, model: str, base_url: str, examples: int, extra: list[str], out: Path,
            max_tokens: int) -> dict[str, Any]:  # fmt: skip
    """One ``vf-eval`` run; returns its figures (reward, tokens, seconds, errors, the command)."""
    command = ["vf-eval", env_id, "-m", model, "-b", base_url, "-k", "BENCH_KEY", "-n", str(examples), "-r", "1",
               "-T", "0", "-t", str(max_tokens), "-c", "32", "-o", str(out), *extra]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "verifiers.cli.vf_eval", *command[1:]], capture_output=True,
                          text=True, cwd=ROOT, env={"BENCH_KEY": "local", "PATH": "/usr/bin:/bin", "COLUMNS": "200"})
    seconds = time.monotonic() - started
    runs = sorted(out.glob(f"evals/{env_id}--{model}/*/metadata.json"), key=lambda p: p.stat().st_mtime)
    if done.returncode != 0 or not runs:
        return {"env": env_id, "error": (done.stderr or done.stdout)[-400:], "seconds": seconds, "command": command}
    metadata = json.loads(runs[-1].read_text())
    rows = [json.loads(line) for line in (runs[-1].parent / "results.jsonl").read_text().splitlines() if line]
    tokens = sum(int(r.get("total_completion_tokens") or 0) for r in rows)
    errors = sum(1 for r in rows if r.get("error"))
    return {"env": env_id, "reward": float(metadata["avg_reward"]), "tokens": tokens, "seconds": seconds,
            "errors": errors, "rows": len(rows), "command": command}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--envs", nargs="*", help="Environment ids (default: every bundled one).")
    parser.add_argument("-n", type=int, default=None, help="Examples per environment (default: the table's).")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--out", type=Path, default=Path("/tmp/model_baselines"))
    parser.add_argument("--json", type=Path, help="Write the figures here as well.")
    args = parser.parse_args()
    folder = prepare_model(args.model)
    args.out.mkdir(parents=True, exist_ok=True)
    chosen = [e for e in ENVIRONMENTS if not args.envs or e[0] in args.envs]
    settings = InferenceConfig(model=str(folder), served_model_name=args.model, port=free_port(),
                               tool_call_parser="hermes", max_model_len=4096, max_num_seqs=32)
    results: list[dict[str, Any]] = []
    with InferenceServer(settings, python=ROOT / ".venv-vllm" / "bin" / "python",
                         log_path=args.out / "vllm.log").start(timeout=600) as server, \
            ScriptedServer("echo", port=0).running() as echo_url:  # fmt: skip
        for env_id, examples, extra in chosen:
            n = args.n or examples
            ours = vf_eval(env_id, args.model, server.base_url, n, extra, args.out / "model", args.max_tokens)
            floor = vf_eval(env_id, "echo", echo_url, n, extra, args.out / "echo", args.max_tokens)
            ours["echo_reward"] = floor.get("reward")
            ours["args"] = extra[1] if extra else ""
            results.append(ours)
            print(_row(ours), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


def _row(r: dict[str, Any]) -> str:
    name = r["env"] + (f" `{r['args']}`" if r.get("args") else "")
    if "error" in r:
        return f"| {name} | failed: {r['error'].strip().splitlines()[-1] if r['error'].strip() else '?'} |"
    rate = r["tokens"] / r["seconds"] if r["seconds"] else 0.0
    echo = "-" if r.get("echo_reward") is None else f"{r['echo_reward']:.3f}"
    return (f"| {name} | {r['rows']} | {r['reward']:.3f} | {echo} | {r['errors']} | {r['tokens']} | {rate:.0f} | "
            f"{r['seconds']:.0f} s |")


if __name__ == "__main__":
    main()
