"""The Hub benchmark's pieces: the load generator against a real local server, argument checks, a smoke run."""

from __future__ import annotations

import http.server
import importlib.util
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOAD = ROOT / "bench" / "hub_load.py"
BENCH = ROOT / "bench" / "hub.py"


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the generator expects

    def do_GET(self) -> None:  # noqa: N802 - the base class's naming
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
            return
        body = b"ok" if self.path == "/ok" else b"missing"
        self.send_response(200 if self.path == "/ok" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def _load(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(LOAD), *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("path", "size"), [("/ok", 2), ("/chunked", 11)])
def test_the_load_generator_counts_requests_and_bytes(server: str, path: str, size: int) -> None:
    done = _load(f"{server}{path}", "--connections", "2", "--seconds", "0.5", "--warmup", "0.1")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["requests"] > 0 and result["errors"] == 0 and result["statuses"] == {"200": result["requests"]}
    assert result["mib_per_s"] == round(result["requests"] * size / 0.5 / 2**20, 2)


def test_the_load_generator_reports_error_statuses(server: str) -> None:
    result = json.loads(_load(f"{server}/missing", "--connections", "1", "--seconds", "0.3", "--warmup", "0").stdout)
    assert result["errors"] == result["requests"] > 0 and set(result["statuses"]) == {"404"}


@pytest.mark.parametrize("args", [["--connections", "0"], ["--seconds", "0"], ["--warmup", "-1"]])
def test_the_load_generator_refuses_bad_arguments(args: list[str]) -> None:
    done = _load("http://127.0.0.1:9/", *args)
    assert done.returncode == 2 and "must be" in done.stderr


@pytest.mark.parametrize("args", [["--repeats", "0"], ["--seconds", "0"], ["--versions", "-1"]])
def test_the_benchmark_refuses_bad_arguments(args: list[str]) -> None:
    done = subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "must be" in done.stderr


def test_ratios_are_medians_of_each_rounds_side_by_side_ratio(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("hub_bench", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "hub_bench", bench)  # dataclasses look their module up there
    spec.loader.exec_module(bench)

    def rounds(*pairs: tuple[float, float]) -> list[dict[str, float]]:
        return [{"rps": rps, "cpu_ms_per_req": cpu} for rps, cpu in pairs]

    hub = rounds((100, 1.0), (30, 2.0), (20, 0.5))
    peer = rounds((50, 3.0), (60, 4.0), (10, 0.5))
    # Round ratios: requests/s 2, 0.5, 2 -> 2 (the ratio of the medians, 30/50, would say 0.6);
    # pypiserver's CPU per request over the Hub's 3, 2, 1 -> 2.
    assert bench._ratios({"hub": hub, "pypiserver": peer}) == {"rps": 2.0, "cpu": 2.0}


@pytest.mark.slow
def test_a_quick_benchmark_run_prints_both_servers(tmp_path: Path) -> None:
    if not (ROOT / ".venv-pypiserver" / "bin" / "pypi-server").exists():
        pytest.skip("pypiserver is not installed: bash scripts/setup_pypiserver.sh")
    out = tmp_path / "figures.json"
    done = subprocess.run([sys.executable, str(BENCH), "--quick", "--versions", "2", "--installs", "1",
                           "--json", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(out.read_text())
    assert set(figures["load"]["wheel download"]) == {"hub", "pypiserver"}
    assert all(run["rps"] > 0 for by in figures["load"].values() for run in by.values())
    assert set(figures["pip_install_s"]) == {"hub", "local", "pypiserver"}
    assert figures["ratios"]["wheel download"]["rps"] > 0 and len(figures["load_average"]) == 2
    assert "| wheel download |" in done.stdout
