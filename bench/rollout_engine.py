"""Rollout engine benchmark: this SDK against the original verifiers 0.3.0, side by side.

Both SDKs run the same environment file (bench/envs/bench_envs.py) against the same
scripted OpenAI-compatible server, each in its own worker process started with its
own venv's python, so neither shares a process or an import path with the other or
with the server. Per run the worker reports wall time, its own CPU time (user + sys,
all threads) and peak RSS; the driver reports the server's CPU use too, so a saturated
server is visible instead of being mistaken for a slow client. Runs alternate SDKs
and each figure is the median of ``--repeats`` runs. Each SDK talks to the server
through the client its own ``vf-eval`` builds (see ``_client``)::

    .venv/bin/python bench/rollout_engine.py                       # full matrix + 10,000 in flight
    .venv/bin/python bench/rollout_engine.py --quick --only ours   # smoke run, a few seconds
    .venv/bin/python bench/rollout_engine.py --repeats 5 --json bench.json

Internally ``python bench/rollout_engine.py worker ...`` is the worker (one JSON line on stdout).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ENV_FILE = Path(__file__).resolve().parent / "envs" / "bench_envs.py"
PYTHONS = {"ours": ROOT / ".venv" / "bin" / "python", "original": ROOT / ".venv-vf030" / "bin" / "python",
           "ours-aiohttp": ROOT / ".venv" / "bin" / "python", "ours-httpx": ROOT / ".venv" / "bin" / "python"}
MAINTAINED = ("ours-aiohttp", "ours-httpx")
"""This SDK on openai's own clients, beside ``make_openai_client`` (openai's aiohttp client with the SDK's error
mapping since issue 13's swap; a hand-written HTTP/1.1 transport before it, measured against these in
docs/benchmarks.md)."""
POLICIES = {"multiturn": "turns:3", "tool": "tools:2"}
MODEL = "scripted"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
CLIENTS_NOTE = ("client (ours): verifiers.http.make_openai_client (openai's aiohttp client), as vf-eval builds it; "
                "ours-aiohttp / ours-httpx: AsyncOpenAI on openai's DefaultAioHttpClient / DefaultAsyncHttpxClient; "
                "client (original): 0.3.0's vf-eval ClientConfig -> OpenAIChatCompletionsClient on httpx's pool")


# -- worker (runs under either SDK's python) ---------------------------------------------------


def _load_env_module(path: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_envs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cpu_seconds() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _field(output: Any, key: str) -> Any:
    return output.get(key) if isinstance(output, dict) else getattr(output, key, None)


def _client(sdk: str, base_url: str, concurrency: int) -> tuple[Any, dict[str, Any]]:
    """The model client each SDK's ``vf-eval`` users get, and the evaluate() options that go with it.

    ours: ``verifiers.http.make_openai_client`` with ``vf-eval``'s settings (2 connections per
    concurrent rollout, no client retries). original: 0.3.0's ``vf-eval`` passes a ``ClientConfig``,
    which 0.3.0 turns into its ``OpenAIChatCompletionsClient`` over an ``AsyncOpenAI`` on httpx's
    default transport (28,000 connections); its default progress bar is switched off.
    """
    if sdk == "ours":
        from verifiers.http import make_openai_client

        return make_openai_client(base_url, api_key="bench", max_connections=2 * concurrency, max_retries=0), {}
    if sdk in MAINTAINED:
        return _maintained_client(sdk, base_url, 2 * concurrency), {}
    from verifiers.types import ClientConfig

    os.environ["BENCH_API_KEY"] = "bench"
    config = ClientConfig(api_key_var="BENCH_API_KEY", api_base_url=base_url)
    return config, {"on_start": lambda *a, **k: None, "on_progress": lambda *a, **k: None}


def _maintained_client(sdk: str, base_url: str, connections: int) -> Any:
    """``AsyncOpenAI`` on openai's own aiohttp or httpx client, with the connection limit ours gets."""
    import httpx2  # openai 3.x's HTTP layer, which both of its clients are built on
    import openai

    limits = httpx2.Limits(max_connections=connections, max_keepalive_connections=connections)
    http = openai.DefaultAioHttpClient if sdk == "ours-aiohttp" else openai.DefaultAsyncHttpxClient
    return openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0, timeout=600.0,
                              http_client=http(limits=limits, timeout=600.0))


async def _worker(args: argparse.Namespace) -> dict[str, Any]:
    import resource

    import verifiers as vf

    envs = _load_env_module(args.env_file)
    env = envs.load_environment(kind=args.kind, n=args.rollouts)
    client, options = _client(args.sdk, args.base_url, args.concurrency)
    rss_before_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    cpu0, wall0 = _cpu_seconds(), time.perf_counter()
    results = await env.evaluate(
        client, MODEL, {"max_tokens": 64}, num_examples=args.rollouts, rollouts_per_example=1,
        max_concurrent=args.concurrency, **options,
    )
    wall, cpu = time.perf_counter() - wall0, _cpu_seconds() - cpu0
    outputs = results["outputs"]
    completions = [_field(o, "completion") or [] for o in outputs]
    return {
        "sdk_version": vf.__version__,
        "rollouts": len(outputs),
        "errors": sum(1 for o in outputs if _field(o, "error")),
        "mean_reward": statistics.fmean(float(_field(o, "reward") or 0.0) for o in outputs) if outputs else 0.0,
        "mean_messages": statistics.fmean(len(c) for c in completions) if completions else 0.0,
        "peak_in_flight": envs.IN_FLIGHT.peak,
        "in_flight_after": envs.IN_FLIGHT.now,
        "wall_s": wall,
        "cpu_s": cpu,
        "rss_before_mib": rss_before_mib,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def worker_main(argv: list[str]) -> None:
    import asyncio
    import logging

    parser = argparse.ArgumentParser(prog="rollout_engine.py worker")
    parser.add_argument("--env-file", required=True)
    parser.add_argument("--kind", choices=sorted(POLICIES), required=True)
    parser.add_argument("--rollouts", type=int, required=True)
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--sdk", choices=sorted(PYTHONS), required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    print(json.dumps(asyncio.run(_worker(args))), flush=True)


# -- driver --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    name: str
    kind: str
    concurrency: int
    rollouts: int
    delay_ms: float = 0.0


class Server:
    """A ``vf-scripted-server`` process; its CPU time is read from /proc, never the client's."""

    def __init__(self, policy: str, delay_ms: float) -> None:
        command = [str(PYTHONS["ours"]), "-m", "verifiers.cli.vf_scripted_server", "--policy", policy, "--port", "0",
                   "--delay-ms", str(delay_ms)]
        self.process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith("READY "):
            self.close()
            raise RuntimeError(f"scripted server did not start: {line!r}")
        self.base_url = line.split()[1]

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def run_once(sdk: str, config: Config, python: Path, timeout_s: float) -> dict[str, Any]:
    """One worker run against a fresh server; the worker's figures plus the server's CPU use."""
    server = Server(POLICIES[config.kind], config.delay_ms)
    try:
        command = [str(python), "-I", __file__, "worker", "--env-file", str(ENV_FILE), "--kind", config.kind,
                   "--rollouts", str(config.rollouts), "--concurrency", str(config.concurrency),
                   "--base-url", server.base_url, "--sdk", sdk]
        cpu0 = server.cpu_seconds()
        # cwd outside the repo: the original's python must never see this repo's `verifiers` package.
        done = subprocess.run(command, cwd="/", capture_output=True, text=True, timeout=timeout_s)
        server_cpu = server.cpu_seconds() - cpu0
    finally:
        server.close()
    if done.returncode != 0:
        raise RuntimeError(f"{sdk} worker failed on {config.name}:\n{done.stderr[-4000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result["rollouts"] != config.rollouts or result["errors"] or result["in_flight_after"]:
        raise RuntimeError(f"{sdk} on {config.name}: {result['rollouts']} rollouts, {result['errors']} errors, "
                           f"{result['in_flight_after']} never cleaned up")
    result.update(sdk=sdk, config=config.name, server_cpu_s=server_cpu,
                  server_util=server_cpu / result["wall_s"] if result["wall_s"] else 0.0)
    return result


def summarize(runs: list[dict[str, Any]]) -> dict[str, float]:
    """Medians over repeats of one (config, sdk) pair."""
    n = runs[0]["rollouts"]
    medians = {key: statistics.median(r[key] for r in runs) for key in (
        "peak_rss_mib", "rss_before_mib", "server_util", "wall_s", "mean_messages", "mean_reward", "peak_in_flight")}
    return {
        "rollouts_per_s": statistics.median(n / r["wall_s"] for r in runs),
        "cpu_ms_per_rollout": statistics.median(1000 * r["cpu_s"] / n for r in runs),
        **medians,
    }


def paired_ratios(ours: list[dict[str, Any]], original: list[dict[str, Any]]) -> dict[str, float]:
    """Ours / original: each run against the other SDK's run of the same repeat, then the median."""
    def ratio(key: str) -> float:
        return statistics.median(a[key] / b[key] for a, b in zip(ours, original))

    return {
        "rollouts_per_s": statistics.median(b["wall_s"] / a["wall_s"] for a, b in zip(ours, original)),
        "cpu_ms_per_rollout": ratio("cpu_s"),
        "peak_rss_mib": ratio("peak_rss_mib"),
    }


def configs(args: argparse.Namespace) -> list[Config]:
    if args.quick:
        return [Config("multiturn c=16", "multiturn", 16, 64), Config("tool c=16", "tool", 16, 64)]
    matrix = [] if args.inflight_only else [
        Config(f"{kind} c={c}", kind, c, args.rollouts_factor * c) for kind in ("multiturn", "tool")
        for c in args.concurrency]
    if args.inflight:
        matrix.append(Config(f"in flight {args.inflight}", "multiturn", args.inflight, args.inflight,
                             args.inflight_delay_ms))
    return matrix


def format_table(summary: dict[str, dict[str, dict[str, float]]]) -> str:
    head = (f"{'config':<22}{'sdk':<14}{'rollouts/s':>11}{'CPU ms/rollout':>16}{'peak RSS MiB':>14}"
            f"{'server CPU':>12}{'msgs':>6}{'in flight':>11}")
    lines = [head, "-" * len(head)]
    for name, by_sdk in summary.items():
        for sdk, s in by_sdk.items():
            if sdk.startswith("ratio"):
                continue
            lines.append(f"{name:<22}{sdk:<14}{s['rollouts_per_s']:>11.0f}{s['cpu_ms_per_rollout']:>16.2f}"
                         f"{s['peak_rss_mib']:>14.0f}{s['server_util']:>11.0%}{s['mean_messages']:>6.1f}"
                         f"{s['peak_in_flight']:>11.0f}")
        for key, label in [("ratio", "ours/orig"), *((f"ratio {m}", f"{m[5:]}/ours") for m in MAINTAINED)]:
            if key not in by_sdk:
                continue
            r = by_sdk[key]
            lines.append(f"{'':<22}{label:<14}{r['rollouts_per_s']:>10.2f}x{r['cpu_ms_per_rollout']:>15.2f}x"
                         f"{r['peak_rss_mib']:>13.2f}x")
    lines.append(CLIENTS_NOTE)
    return "\n".join(lines)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per (config, SDK); figures are medians")
    parser.add_argument("--quick", action="store_true", help="small smoke configuration, one repeat")
    parser.add_argument("--only", nargs="+", choices=sorted(PYTHONS), default=["ours", "original"],
                        help="the SDKs (and transports) to run; ours-aiohttp / ours-httpx: this SDK on openai's "
                        "aiohttp or httpx client instead of its own (default: ours original)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--rollouts-factor", type=int, default=4, help="rollouts per config = factor x concurrency")
    parser.add_argument("--inflight", type=int, default=10_000, help="rollouts all in flight at once (0: skip)")
    parser.add_argument("--inflight-delay-ms", type=float, default=2000.0, help="server delay in the in-flight run")
    parser.add_argument("--inflight-original", action="store_true", help="run the in-flight config on the original too")
    parser.add_argument("--inflight-only", action="store_true", help="run the in-flight config alone")
    parser.add_argument("--original-python", type=Path, default=PYTHONS["original"])
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds allowed per worker run")
    parser.add_argument("--json", type=Path, help="save every run and the medians here")
    parser.add_argument("--from-json", type=Path, nargs="+", help="print the table of saved runs; measure nothing")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    if args.quick:
        args.repeats, args.inflight = 1, 0
    if not configs(args) and not args.from_json:
        parser.error("nothing to run: --inflight-only needs --inflight > 0 and no --quick")
    return args


def tabulate(runs: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """Config -> SDK -> medians, plus ``"ratio"`` where both SDKs ran."""
    summary: dict[str, dict[str, dict[str, float]]] = {}
    done = [r for r in runs if "failed" not in r]
    for name in dict.fromkeys(r["config"] for r in done):
        by_sdk = {sdk: sorted((r for r in done if r["config"] == name and r["sdk"] == sdk), key=lambda r: r["repeat"])
                  for sdk in PYTHONS}
        summary[name] = {sdk: summarize(rs) for sdk, rs in by_sdk.items() if rs}
        if by_sdk["ours"] and by_sdk["original"]:
            summary[name]["ratio"] = paired_ratios(by_sdk["ours"], by_sdk["original"])
        for sdk in MAINTAINED:  # openai's plain clients against the SDK's, run by run
            if by_sdk[sdk] and by_sdk["ours"]:
                summary[name][f"ratio {sdk}"] = paired_ratios(by_sdk[sdk], by_sdk["ours"])
    return summary


def measure(args: argparse.Namespace, pythons: dict[str, Path]) -> list[dict[str, Any]]:
    sdks = list(dict.fromkeys(args.only))
    runs: list[dict[str, Any]] = []
    for config in configs(args):
        config_sdks = sdks if config.delay_ms == 0 or args.inflight_original else [s for s in sdks if s != "original"]
        for repeat in range(args.repeats):
            for sdk in config_sdks[repeat % len(config_sdks):] + config_sdks[:repeat % len(config_sdks)]:  # rotate
                try:
                    result = run_once(sdk, config, pythons[sdk], args.timeout)
                except (RuntimeError, subprocess.TimeoutExpired) as error:
                    # Recorded and shown as failed; the other configurations still run.
                    print(f"  {config.name:<20} {sdk:<9} #{repeat}: FAILED {error}", file=sys.stderr)
                    runs.append({"sdk": sdk, "config": config.name, "repeat": repeat, "failed": str(error)[-2000:]})
                    continue
                result["repeat"] = repeat
                runs.append(result)
                print(f"  {config.name:<20} {sdk:<9} #{repeat}: {config.rollouts / result['wall_s']:8.0f} rollouts/s "
                      f"{1000 * result['cpu_s'] / config.rollouts:7.2f} CPU ms/rollout "
                      f"{result['peak_rss_mib']:6.0f} MiB  server {result['server_util']:.0%}", file=sys.stderr)
    return runs


def report(runs: list[dict[str, Any]]) -> int:
    """Print the table and the failed runs; 1 when a run failed."""
    print(format_table(tabulate(runs)))
    failed = [r for r in runs if "failed" in r]
    for r in failed:
        print(f"FAILED {r['config']} {r['sdk']} #{r['repeat']}: {r['failed'].strip().splitlines()[0]}")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.from_json:
        return report([r for path in args.from_json for r in json.loads(path.read_text())["runs"]])
    pythons = {**PYTHONS, "original": args.original_python}
    for sdk in args.only:
        if not pythons[sdk].exists():
            print(f"missing {sdk} python at {pythons[sdk]} (see scripts/original_venv.sh)", file=sys.stderr)
            return 2
    runs = measure(args, pythons)
    if args.json:
        meta = {"argv": argv, "date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
                "configs": [asdict(c) for c in configs(args)]}
        args.json.write_text(json.dumps({"meta": meta, "summary": tabulate(runs), "runs": runs}, indent=1))
    return report(runs)


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        worker_main(sys.argv[2:])
    else:
        sys.exit(main(sys.argv[1:]))
