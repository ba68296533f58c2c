"""bench/hub_blobs.py: its FileResponse variant answers as the Hub's route does, its ratios, bad arguments, a run."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from fastapi.testclient import TestClient

from hub_server.services import accounts
from hub_server.storage import blob_key
from hub_server.testing.dists import make_wheel, upload_form
from hub_server.testing.nginx import nginx_available
from tests.hub_server.conftest import basic
from tests.hub_server.scale import overwrite_blob

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "hub_blobs.py"
JSON = "application/vnd.pypi.simple.v1+json"


@pytest.fixture
def script(load_script: Callable[[Path, str], ModuleType], monkeypatch: pytest.MonkeyPatch
           ) -> Callable[[str, Path], ModuleType]:
    """``script(name, path)``: a bench script imported with ``bench/`` on the path (its siblings import)."""
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    return lambda name, path: load_script(path, name)


def test_the_file_response_variant_answers_as_the_hubs_route(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             script: Callable[[str, Path], ModuleType]) -> None:
    monkeypatch.setenv("VF_HUB_DATA_DIR", str(tmp_path / "hub"))
    monkeypatch.delenv("VF_HUB_STORAGE_URL", raising=False)  # the variant is for the local blob folder
    monkeypatch.delenv("VF_HUB_DATABASE_URL", raising=False)
    apps = script("hub_blob_apps", ROOT / "bench" / "hub_blob_apps.py")
    app = apps.file_response_app()
    hub = app.state.hub
    with hub.db.write() as session:
        _user, token = accounts.create_user(session, "alice", dt.timedelta(days=1))
    wheel = make_wheel(tmp_path, "demo-env", "0.1.0", body=f'DATA = "{"y" * 9000}"\n')
    data = wheel.read_bytes()
    with TestClient(app) as client:
        with open(wheel, "rb") as handle:
            assert client.post("/legacy/", data=upload_form(wheel, "demo-env", "0.1.0"), headers=basic(token),
                               files={"content": (wheel.name, handle, "application/octet-stream")}).status_code == 200
        url = client.get("/simple/demo-env/", headers={"Accept": JSON}).json()["files"][0]["url"]
        whole = client.get(url)
        etag = f'"{hashlib.sha256(data).hexdigest()}"'
        assert whole.status_code == 200 and whole.content == data and whole.headers["etag"] == etag
        part = client.get(url, headers={"Range": "bytes=10-19"})
        assert part.status_code == 206 and part.content == data[10:20]
        assert client.get(url, headers={"If-None-Match": etag}).status_code == 304
        assert client.get(url, headers={"Range": "bytes=2-3", "If-Range": '"other"'}).content == data
        assert client.get(url.replace("demo_env", "other_env")).status_code == 404
        overwrite_blob(hub.storage, blob_key(hashlib.sha256(data).hexdigest()), b"not the wheel")
        corrupt = client.get(url)
        assert corrupt.status_code == 503 and b"not the wheel" not in corrupt.content
    hub.db.dispose()


def test_ratios_against_the_lane_are_medians_of_each_rounds_ratio(script: Callable[[str, Path], ModuleType]) -> None:
    bench = script("hub_blobs_bench", BENCH)

    def rounds(*pairs: tuple[float, float]) -> list[dict[str, float]]:
        return [{"rps": rps, "cpu_ms": cpu, "load_cpu_s": 1.0} for rps, cpu in pairs]

    summary = bench._summary({"lane": rounds((100, 1.0), (30, 2.0), (20, 0.5)),
                              "nginx": rounds((50, 2.0), (60, 1.0), (10, 0.5))})
    # downloads/s per round 0.5, 2, 0.5 -> 0.5; the lane's CPU over nginx's 0.5, 2, 1 -> 1
    assert summary["nginx"]["rps_vs_lane"] == 0.5 and summary["nginx"]["cpu_vs_lane"] == 1.0
    assert summary["lane"]["rps_vs_lane"] == summary["lane"]["cpu_vs_lane"] == 1.0
    assert summary["nginx"]["rps"] == 50 and summary["nginx"]["cpu_ms"] == 1.0


@pytest.mark.parametrize("args", [["--repeats", "0"], ["--seconds", "0"], ["--connections", "0"],
                                  ["--big-mib", "-1"], ["--big-seconds", "0"], ["--warmup", "-1"]])
def test_the_benchmark_refuses_bad_arguments(args: list[str]) -> None:
    done = subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "must be" in done.stderr


@pytest.mark.slow
@pytest.mark.skipif(not nginx_available(), reason="needs nginx (apt-get install nginx-light)")
def test_a_quick_run_measures_every_variant(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    done = subprocess.run([sys.executable, str(BENCH), "--quick", "--big-mib", "1.5", "--connections", "2",
                           "--json", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 2 and all(set(by) == {"lane", "fileresponse", "nginx+hub", "nginx"} for by in rows.values())
    assert all(f["rps"] > 0 and f["cpu_ms"] > 0 for by in rows.values() for f in by.values())
    assert "| fileresponse |" in done.stdout
