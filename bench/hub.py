"""Hub benchmark: the Environments Hub against pypiserver 2.4 serving the same files, in one run.

Measured in ``--repeats`` rounds that alternate the two servers; each figure is a median over the
rounds, and each Hub / pypiserver ratio the median of the rounds' own side-by-side ratios (so a
slow moment on the shared machine hits both servers of a round rather than one figure):

* requests/s for ``/simple/<name>/`` (HTML, and JSON as pip and uv ask for it; pypiserver always
  answers HTML) and for downloading the environment's wheel, under concurrent keep-alive load from
  a second process (``bench/hub_load.py``), with each server's CPU seconds per 1,000 requests;
* ``pip install`` of the environment from the Hub's index against installing the same wheel from a
  local file (``pip --isolated``, ``--no-deps``, no cache, a fresh ``--target`` each time), and from
  pypiserver for reference.

The environment is ``environments/reverse_text`` built with ``python -m build``, next to
``--versions`` older synthetic releases so the project page lists a realistic number of files.
The Hub runs as ``uvicorn hub_server.app:create_app`` (SQLite + folder, access log off) and
pypiserver as ``pypi-server run`` with its cache and waitress (``scripts/setup_pypiserver.sh``)::

    bash scripts/setup_pypiserver.sh                  # once: .venv-pypiserver
    .venv/bin/python bench/hub.py                     # 3 rounds x 5 s per figure, 7 installs each
    .venv/bin/python bench/hub.py --quick             # smoke run, ~1 minute
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the test helpers that make synthetic wheels

from hub_server.testing.dists import make_sdist, make_wheel  # noqa: E402

PYTHON = ROOT / ".venv" / "bin" / "python"
PYPISERVER = ROOT / ".venv-pypiserver" / "bin" / "pypi-server"
LOAD = Path(__file__).resolve().parent / "hub_load.py"
ENVIRONMENT = ROOT / "environments" / "reverse_text"
PIP_ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Package:
    """The files both servers serve, and the environment's own wheel."""

    name: str
    version: str
    wheel: Path
    files: list[Path]


@dataclass(frozen=True)
class Figures:
    """A run's medians: per load, per server, its measures; per pip source, seconds."""

    package: str
    load: dict[str, dict[str, dict[str, float]]]
    ratios: dict[str, dict[str, float]]  # per load: median of per-round Hub/pypiserver rps and CPU ratios
    pip_install_s: dict[str, float]
    load_average: tuple[float, float]  # the machine's 1-minute load average at the start and the end


@dataclass(frozen=True)
class Server:
    """A server process under test."""

    name: str
    url: str
    process: subprocess.Popen[bytes]
    simple: str  # the /simple/<name>/ URL
    wheel: str  # the wheel's download URL


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run(*cmd: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{done.stdout}\n{done.stderr}")
    return done.stdout


def build_package(out: Path, versions: int) -> Package:
    """The environment's wheel and sdist, plus ``versions`` synthetic older releases of the same name."""
    _run(str(PYTHON), "-m", "build", "--no-isolation", "--outdir", str(out), str(ENVIRONMENT))
    [wheel] = out.glob("*.whl")
    name, version = "reverse-text", wheel.name.split("-")[1]
    files = [wheel, *out.glob("*.tar.gz")]
    for i in range(versions):
        older = f"0.0.{i + 1}"
        files += [make_wheel(out / older, name, older), make_sdist(out / older, name, older)]
    return Package(name, version, wheel, files)


def _tree_cpu_seconds(pid: int) -> float:
    """CPU time of a process and its live children (uvicorn's workers)."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if stat.parent.name == str(pid) or fields[1] == str(pid):
            total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return total


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{url} exited:\n{log.read_text()}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url} did not come up:\n{log.read_text()}")


@contextmanager
def hub_server(work: Path, package: Package, workers: int) -> Iterator[Server]:
    """The Hub on SQLite + a folder, the package uploaded with twine."""
    data = work / "hub-data"
    env = {"VF_HUB_DATA_DIR": str(data)}
    token = _run(str(PYTHON), "-m", "hub_server.cli.vf_hub", "admin", "create-user", "bench", "--data-dir", str(data),
                 env=env).strip().splitlines()[-1]
    port, log = _free_port(), work / "hub.log"
    process = subprocess.Popen(
        [str(PYTHON), "-m", "uvicorn", "hub_server.app:create_app", "--factory", "--host", "127.0.0.1",
         "--port", str(port), "--workers", str(workers), "--no-access-log", "--log-level", "warning"],
        cwd=ROOT, env={**os.environ, **env}, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(f"{url}/health", process, log)
        _run(str(PYTHON), "-m", "twine", "upload", "--repository-url", f"{url}/legacy/", "-u", "__token__",
             "-p", token, "--non-interactive", "--disable-progress-bar", *map(str, package.files),
             env={"TWINE_NON_INTERACTIVE": "1"})
        page = httpx.get(f"{url}/simple/{package.name}/", headers={"Accept": PIP_ACCEPT}).json()
        wheel = next(f["url"] for f in page["files"] if f["filename"] == package.wheel.name)
        yield Server("hub", url, process, f"{url}/simple/{package.name}/", f"{url}{wheel}")
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def pypi_server(work: Path, package: Package) -> Iterator[Server]:
    """pypiserver 2.4 serving a folder holding the same files."""
    if not PYPISERVER.exists():
        raise SystemExit("pypiserver is missing: run `bash scripts/setup_pypiserver.sh` first")
    folder = work / "pypiserver-packages"
    folder.mkdir()
    for file in package.files:
        shutil.copy(file, folder / file.name)
    port, log = _free_port(), work / "pypiserver.log"
    process = subprocess.Popen(
        [str(PYPISERVER), "run", "-i", "127.0.0.1", "-p", str(port), "-a", ".", "-P", ".", "--disable-fallback",
         "--health-endpoint", "/health", str(folder)], stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(f"{url}/health", process, log)
        yield Server("pypiserver", url, process, f"{url}/simple/{package.name}/",
                     f"{url}/packages/{package.wheel.name}")
    finally:
        process.terminate()
        process.wait(timeout=30)


def load(server: Server, url: str, accept: str, args: argparse.Namespace) -> dict[str, float]:
    """One load run against ``url``: requests/s and the server's CPU seconds per 1,000 requests."""
    cpu_before = _tree_cpu_seconds(server.process.pid)
    out = _run(sys.executable, str(LOAD), url, "--accept", accept, "--connections", str(args.connections),
               "--seconds", str(args.seconds), "--warmup", str(args.warmup))
    cpu = _tree_cpu_seconds(server.process.pid) - cpu_before
    result = json.loads(out)
    if result["errors"]:
        raise SystemExit(f"{server.name} answered errors for {url}: {result['statuses']}")
    return {"rps": result["rps"], "cpu_ms_per_req": 1000 * cpu / max(1, result["requests"]) * (
        args.seconds / (args.seconds + args.warmup)), "p99_ms": result["p99_ms"], "load_cpu_s": result["cpu_s"]}


def pip_install_seconds(source: list[str], work: Path) -> float:
    """Wall time of one ``pip install --no-deps`` into a fresh target folder."""
    target = Path(tempfile.mkdtemp(dir=work, prefix="target-"))
    start = time.perf_counter()
    _run(str(PYTHON), "-m", "pip", "--isolated", "install", "--quiet", "--no-deps", "--no-cache-dir",
         "--disable-pip-version-check", "--target", str(target), *source)
    elapsed = time.perf_counter() - start
    shutil.rmtree(target)
    return elapsed


def _median(values: list[dict[str, float]], key: str) -> float:
    return statistics.median(v[key] for v in values)


def _ratios(runs: dict[str, list[dict[str, float]]]) -> dict[str, float]:
    """Medians of the rounds' Hub/pypiserver ratios: requests/s, and pypiserver's CPU per request over the Hub's."""
    pairs = list(zip(runs["hub"], runs["pypiserver"], strict=True))
    return {"rps": statistics.median(h["rps"] / p["rps"] for h, p in pairs),
            "cpu": statistics.median(p["cpu_ms_per_req"] / h["cpu_ms_per_req"] for h, p in pairs)}


def run(args: argparse.Namespace) -> Figures:
    load_start = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="vf-hub-bench-"))
    try:
        package = build_package(work / "dist", args.versions)
        with hub_server(work, package, args.workers) as hub, pypi_server(work, package) as peer:
            rows: dict[str, dict[str, list[dict[str, float]]]] = {}
            targets = [("/simple/<name>/ HTML", "text/html", "simple"), ("/simple/<name>/ pip's Accept (JSON)",
                       PIP_ACCEPT, "simple"), ("wheel download", "*/*", "wheel")]
            for round_ in range(args.repeats):
                servers = (hub, peer) if round_ % 2 == 0 else (peer, hub)
                for label, accept, kind in targets:
                    for server in servers:
                        url = server.simple if kind == "simple" else server.wheel
                        rows.setdefault(label, {}).setdefault(server.name, []).append(load(server, url, accept, args))
            installs: dict[str, list[float]] = {"hub": [], "local": [], "pypiserver": []}
            sources = {"hub": ["--index-url", f"{hub.url}/simple/", f"{package.name}=={package.version}"],
                       "local": [str(package.wheel)],
                       "pypiserver": ["--index-url", f"{peer.url}/simple/", f"{package.name}=={package.version}"]}
            for _ in range(args.installs):
                for name, source in sources.items():
                    installs[name].append(pip_install_seconds(source, work))
        return Figures(
            package=f"{package.name}=={package.version} ({len(package.files)} files listed)",
            load={label: {name: {k: _median(runs, k) for k in runs[0]} for name, runs in by.items()}
                  for label, by in rows.items()},
            ratios={label: _ratios(by) for label, by in rows.items()},
            pip_install_s={name: statistics.median(times) for name, times in installs.items()},
            load_average=(load_start, os.getloadavg()[0]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(result: Figures, args: argparse.Namespace) -> str:
    """The figures as two Markdown tables (what docs/benchmarks.md records for the Hub)."""
    lines = [f"{result.package}; {args.connections} connections, {args.seconds:g} s per figure, "
             f"median of {args.repeats}; Hub workers: {args.workers}; load average "
             f"{result.load_average[0]:.1f} at the start, {result.load_average[1]:.1f} at the end", "",
             "| load | Hub req/s | pypiserver req/s | Hub / pypiserver | Hub CPU ms/req | pypiserver CPU ms/req "
             "| CPU ratio |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for label, by in result.load.items():
        hub, peer, ratio = by["hub"], by["pypiserver"], result.ratios[label]
        lines.append(f"| {label} | {hub['rps']:.0f} | {peer['rps']:.0f} | {ratio['rps']:.2f}x | "
                     f"{hub['cpu_ms_per_req']:.2f} | {peer['cpu_ms_per_req']:.2f} | {ratio['cpu']:.2f}x |")
    pip = result.pip_install_s
    lines += ["", f"| pip install --no-deps (median of {args.installs}) | seconds | vs local file |", "|---|---:|---:|"]
    for name, label in (("local", "the wheel from a local file"), ("hub", "from the Hub's index"),
                        ("pypiserver", "from pypiserver's index")):
        lines.append(f"| {label} | {pip[name]:.2f} | {pip[name] / pip['local']:.2f}x |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="Rounds per load figure (median shown).")
    parser.add_argument("--seconds", type=float, default=5.0, help="Measured seconds per load run.")
    parser.add_argument("--warmup", type=float, default=1.0, help="Unmeasured seconds before each load run.")
    parser.add_argument("--connections", type=int, default=32, help="Concurrent keep-alive connections.")
    parser.add_argument("--installs", type=int, default=7, help="pip installs per source (median shown).")
    parser.add_argument("--versions", type=int, default=20, help="Extra synthetic releases on the project page.")
    parser.add_argument("--workers", type=int, default=1, help="Hub worker processes (pypiserver runs one).")
    parser.add_argument("--quick", action="store_true", help="1 round of 2 s, at most 3 installs: a smoke run.")
    parser.add_argument("--json", type=Path, help="Also write the figures to this file.")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.seconds, args.installs = 1, 2.0, min(args.installs, 3)
    if min(args.repeats, args.connections, args.installs, args.workers) < 1 or args.seconds <= 0 or args.versions < 0:
        parser.error("counts must be >= 1, --seconds > 0, --versions >= 0")
    result = run(args)
    print(report(result, args))
    if args.json:
        args.json.write_text(json.dumps(asdict(result), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
