"""Hub downloads: the hand-written blob lane against Starlette's ``FileResponse`` and nginx, side by side (issue 13).

One Hub data folder (SQLite + blob folder) holds two wheels, a small one and one of ``--big-mib`` MiB,
uploaded with twine. Four ways of downloading them run at once, each its own process tree:

* ``lane``: the Hub as shipped (``create_app``): the small wheel from the blob lane (memory, in
  front of FastAPI), the big one from the ``files`` route's own 256 KiB stream;
* ``fileresponse``: the Hub with the lane off and the route sending files with Starlette's
  ``FileResponse`` (``bench/hub_blob_apps.py``);
* ``nginx+hub``: the scale path as docs/hub.md configures it: nginx (1 worker) in front of the Hub
  run with ``VF_HUB_ACCEL_REDIRECT``: the small wheel still comes from the lane, through the proxy;
  for the big one the Hub answers ``X-Accel-Redirect`` and nginx sends the file (CPU: both together);
* ``nginx``: nginx alone on the blob folder, no Hub at all (the floor: what sending bytes costs).

Per round the variants' order rotates; per (file, connections) each variant gets a load run from
``bench/hub_load.py`` (a separate process, keep-alive, one request in flight per connection). Figures
are medians over the rounds, and each ratio against ``lane`` is the median of the rounds' own
ratios (downloads/s: variant / lane; CPU per download: lane / variant, so for both >= 0.8 means
"within the issue's 80% bar")::

    .venv/bin/python bench/hub_blobs.py --repeats 3 --seconds 3 --big-seconds 8
    .venv/bin/python bench/hub_blobs.py --quick      # smoke run, well under a minute of load
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from hub import LOAD, PIP_ACCEPT, PYTHON, ROOT, _free_port, _run, _tree_cpu_seconds, _wait_ready  # noqa: E402

from hub_server.testing.dists import make_wheel  # noqa: E402 (hub put the repository on the path)
from hub_server.testing.nginx import ACCEL_PREFIX, nginx_available, running_nginx, stop_process  # noqa: E402

VARIANTS = ("lane", "fileresponse", "nginx+hub", "nginx")


@dataclass(frozen=True)
class Target:
    """One file every variant serves: its label, size, sha256 and the Hub's path for it."""

    label: str
    size: int
    sha256: str
    path: str  # /files/<sha256>/<filename>

    @property
    def blob_path(self) -> str:
        """Where the file lies under the blob folder (nginx's own URL for it)."""
        return f"/sha256/{self.sha256[:2]}/{self.sha256[2:4]}/{self.sha256}"


@dataclass
class Variant:
    """A way of serving downloads: the base URL to load, how a target maps onto it, the processes to charge."""

    name: str
    url: str
    pids: list[int]
    static: bool = False  # nginx alone: files by their blob path

    def target_url(self, target: Target) -> str:
        return f"{self.url}{target.blob_path if self.static else target.path}"


def make_files(out: Path, big_mib: float) -> list[Path]:
    """A small wheel (a few KiB, like an environment's) and a big one of about ``big_mib`` MiB (incompressible)."""
    small = make_wheel(out / "small", "blob-bench-small", "1.0", body=f'DATA = "{os.urandom(3072).hex()}"\n')
    # make_wheel stores its members uncompressed: n random bytes as hex are 2n bytes in the wheel
    big = make_wheel(out / "big", "blob-bench-big", "1.0", body=f'DATA = "{os.urandom(int(big_mib * 2**19)).hex()}"\n')
    return [small, big]


def _hub(work: Path, name: str, factory: str, env: dict[str, str], stack: ExitStack) -> Variant:
    """A one-worker uvicorn running ``factory`` (``module:function``) over the shared data folder."""
    port, log = _free_port(), work / f"{name}.log"
    app_dir = ["--app-dir", str(BENCH)] if factory.startswith("hub_blob_apps") else []
    process = subprocess.Popen(
        [str(PYTHON), "-m", "uvicorn", factory, "--factory", *app_dir, "--host", "127.0.0.1", "--port", str(port),
         "--no-access-log", "--log-level", "warning"],
        cwd=ROOT, env={**os.environ, **env, "PYTHONPATH": str(ROOT)}, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    stack.callback(stop_process, process)
    url = f"http://127.0.0.1:{port}"
    _wait_ready(f"{url}/health", process, log)
    return Variant(name, url, [process.pid])


def _nginx(work: Path, hub: Variant, blobs: Path, stack: ExitStack) -> tuple[Variant, Variant]:
    """The documented nginx in front of ``hub``, plus a direct route onto the blob folder for the floor figure."""
    if not nginx_available():
        raise SystemExit("nginx is missing: apt-get install -y nginx-light")
    direct = f"        location /sha256/ {{ alias {blobs}/sha256/; }}\n"  # the bench's only: a deployment has none
    url, process = stack.enter_context(running_nginx(work / "nginx", hub.url.removeprefix("http://"), blobs, direct))
    return Variant("nginx+hub", url, [process.pid, *hub.pids]), Variant("nginx", url, [process.pid], static=True)


@contextmanager
def servers(work: Path, files: list[Path]) -> Iterator[tuple[list[Target], dict[str, Variant]]]:
    """Every variant up over one data folder holding ``files`` (uploaded through the ``lane`` Hub)."""
    data = work / "hub-data"
    env = {"VF_HUB_DATA_DIR": str(data)}
    token = _run(str(PYTHON), "-m", "hub_server.cli.vf_hub", "admin", "create-user", "bench", "--data-dir", str(data),
                 env=env).strip().splitlines()[-1]
    with ExitStack() as stack:
        lane = _hub(work, "lane", "hub_server.app:create_app", env, stack)
        _run(str(PYTHON), "-m", "twine", "upload", "--repository-url", f"{lane.url}/legacy/", "-u", "__token__",
             "-p", token, "--non-interactive", "--disable-progress-bar", *map(str, files),
             env={"TWINE_NON_INTERACTIVE": "1"})
        targets = []
        for label, file in zip(("small", "big"), files):
            page = httpx.get(f"{lane.url}/simple/{file.name.split('-')[0].replace('_', '-')}/",
                             headers={"Accept": PIP_ACCEPT}).json()
            [entry] = page["files"]
            targets.append(Target(label, file.stat().st_size, entry["hashes"]["sha256"], entry["url"]))
        fileresponse = _hub(work, "fileresponse", "hub_blob_apps:file_response_app", env, stack)
        accel = _hub(work, "accel", "hub_server.app:create_app", {**env, "VF_HUB_ACCEL_REDIRECT": ACCEL_PREFIX}, stack)
        behind, alone = _nginx(work, accel, data / "blobs", stack)
        variants = {v.name: v for v in (lane, fileresponse, behind, alone)}
        for variant in variants.values():
            for target in targets:
                _check(variant, target)
        yield targets, variants


def _check(variant: Variant, target: Target) -> None:
    """Each variant must send the very bytes, or its figures mean nothing."""
    answer = httpx.get(variant.target_url(target), timeout=60)
    if answer.status_code != 200 or hashlib.sha256(answer.content).hexdigest() != target.sha256:
        raise SystemExit(f"{variant.name} did not send {target.label} intact: {answer.status_code}, "
                         f"{len(answer.content)} of {target.size} bytes")


def load(variant: Variant, target: Target, connections: int, args: argparse.Namespace) -> dict[str, float]:
    """One load run: downloads/s and the variant's processes' CPU ms per download."""
    # 64 big downloads at once take seconds each: a short window would see none start and finish
    seconds = args.big_seconds if target.label == "big" else args.seconds
    before = sum(_tree_cpu_seconds(pid) for pid in variant.pids)
    out = _run(sys.executable, str(LOAD), variant.target_url(target), "--connections", str(connections),
               "--seconds", str(seconds), "--warmup", str(args.warmup))
    cpu = sum(_tree_cpu_seconds(pid) for pid in variant.pids) - before
    result = json.loads(out)
    if result["errors"]:
        raise SystemExit(f"{variant.name} answered errors for {target.label}: {result['statuses']}")
    if not result["requests"]:
        raise SystemExit(f"no {target.label} download by {variant.name} started and finished in {seconds:g} s "
                         f"with {connections} connections: give it longer (--seconds, --big-seconds)")
    measured = seconds / (seconds + args.warmup)  # the load ran through the warm-up too
    return {"rps": result["rps"], "cpu_ms": 1000 * cpu * measured / result["requests"],
            "load_cpu_s": result["cpu_s"]}


def run(args: argparse.Namespace) -> dict[str, object]:
    """All rounds; the medians and the median ratios against ``lane`` per (file, connections)."""
    load_start = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="vf-hub-blobs-"))
    try:
        files = make_files(work / "dist", args.big_mib)
        with servers(work, files) as (targets, variants):
            runs: dict[str, dict[str, list[dict[str, float]]]] = {}
            for round_ in range(args.repeats):
                order = VARIANTS[round_ % len(VARIANTS):] + VARIANTS[:round_ % len(VARIANTS)]
                for target in targets:
                    for connections in args.connections:
                        key = f"{target.label} ({target.size / 1024:,.0f} KiB), c={connections}"
                        for name in order:
                            runs.setdefault(key, {}).setdefault(name, []).append(
                                load(variants[name], target, connections, args))
        return {"rows": {key: _summary(by) for key, by in runs.items()},
                "load_average": (load_start, os.getloadavg()[0])}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _summary(by: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, float]]:
    lane = by["lane"]
    out = {}
    for name, figures in by.items():
        pairs = list(zip(lane, figures))
        out[name] = {"rps": statistics.median(f["rps"] for f in figures),
                     "cpu_ms": statistics.median(f["cpu_ms"] for f in figures),
                     "rps_vs_lane": statistics.median(f["rps"] / b["rps"] for b, f in pairs),
                     "cpu_vs_lane": statistics.median(b["cpu_ms"] / f["cpu_ms"] for b, f in pairs),
                     "load_cpu_s": statistics.median(f["load_cpu_s"] for f in figures)}
    return out


def report(result: dict[str, object], args: argparse.Namespace) -> str:
    """A Markdown table: per file and concurrency, each variant's medians and its ratios against the lane."""
    start, end = result["load_average"]  # type: ignore[misc]
    lines = [f"{args.seconds:g} s per figure ({args.big_seconds:g} s for the big file) after {args.warmup:g} s "
             f"warm-up, median of {args.repeats} rounds; "
             f"load average {start:.1f} at the start, {end:.1f} at the end", "",
             "| file, connections | variant | downloads/s | CPU ms/download | vs lane: downloads/s "
             "| vs lane: CPU/download | load generator CPU s |", "|---|---|---:|---:|---:|---:|---:|"]
    for key, by in result["rows"].items():  # type: ignore[attr-defined]
        for i, (name, f) in enumerate(by.items()):
            lines.append(f"| {key if i == 0 else ''} | {name} | {f['rps']:.0f} | {f['cpu_ms']:.3f} | "
                         f"{f['rps_vs_lane']:.2f}x | {f['cpu_vs_lane']:.2f}x | {f['load_cpu_s']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="Rounds (the variants' order rotates each round).")
    parser.add_argument("--seconds", type=float, default=3.0, help="Measured seconds per load run.")
    parser.add_argument("--warmup", type=float, default=1.0, help="Unmeasured seconds before each load run.")
    parser.add_argument("--connections", type=int, nargs="+", default=[1, 64], help="Concurrencies to measure.")
    parser.add_argument("--big-mib", type=float, default=5.0, help="Size of the big wheel in MiB.")
    parser.add_argument("--big-seconds", type=float, default=8.0, help="Measured seconds per big-wheel load run.")
    parser.add_argument("--quick", action="store_true", help="1 round of 1 s: a smoke run.")
    parser.add_argument("--json", type=Path, help="Also write the figures to this file.")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.seconds, args.big_seconds, args.warmup = 1, 1.0, 2.0, 0.3
    if args.repeats < 1 or min(args.connections) < 1 or min(args.seconds, args.big_seconds, args.big_mib) <= 0 \
            or args.warmup < 0:
        parser.error("--repeats and --connections must be >= 1, --seconds, --big-seconds and --big-mib > 0, "
                     "--warmup >= 0")
    result = run(args)
    print(report(result, args))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main(sys.argv[1:])
    print(f"(took {time.perf_counter() - started:.0f} s)", file=sys.stderr)
    sys.exit(code)
