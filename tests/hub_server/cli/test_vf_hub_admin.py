"""``vf-hub admin gc`` on a real data folder, and ``vf-hub serve --access-log/--no-access-log``."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from hub_server import Settings, create_app
from hub_server.cli.vf_hub import app
from hub_server.storage import blob_key
from hub_server.testing.dists import make_wheel, upload_form
from tests.hub_server.cli.test_vf_hub import REPO_ROOT, _create_user, _free_port
from tests.hub_server.conftest import basic

runner = CliRunner()


def _orphan(blobs: Path, data: bytes, age_hours: float) -> Path:
    """A blob no file references (as a failed upload leaves), stored ``age_hours`` ago."""
    path = blobs / blob_key(hashlib.sha256(data).hexdigest())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    then = time.time() - age_hours * 3600
    os.utime(path, (then, then))
    return path


def test_gc_deletes_old_orphans_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("VF_HUB_DATABASE_URL", "VF_HUB_STORAGE_URL"):  # this test looks into the blob folder
        monkeypatch.delenv(variable, raising=False)
    data = tmp_path / "hub"
    token = _create_user(data, "alice")
    wheel = make_wheel(tmp_path, "demo-env", "0.1.0")
    hub_app = create_app(Settings(data_dir=data))
    with TestClient(hub_app) as client, open(wheel, "rb") as handle:
        assert client.post("/legacy/", data=upload_form(wheel, "demo-env", "0.1.0"), headers=basic(token),
                           files={"content": (wheel.name, handle)}).status_code == 200
    hub_app.state.hub.db.dispose()
    blobs = data / "blobs"
    old, young = _orphan(blobs, b"old orphan", 48), _orphan(blobs, b"young orphan", 1)
    kept = {p for p in (blobs / "sha256").rglob("*") if p.is_file()} - {old, young}
    assert len(kept) == 2  # the wheel and its METADATA

    dry = runner.invoke(app, ["admin", "gc", "--dry-run", "--data-dir", str(data)])
    assert dry.exit_code == 0, dry.output
    assert f"would delete {old.relative_to(blobs)}" in dry.output and "dry run: nothing deleted" in dry.output
    assert old.exists()
    done = runner.invoke(app, ["admin", "gc", "--data-dir", str(data)])
    assert done.exit_code == 0, done.output
    assert "1 unreferenced blob(s), 10 bytes deleted; 0 referenced, 3 younger than 24 h" in done.output
    assert not old.exists() and young.exists() and all(p.exists() for p in kept)
    assert runner.invoke(app, ["admin", "gc", "--grace-hours", "0.5", "--data-dir", str(data)]).exit_code == 0
    assert not young.exists() and all(p.exists() for p in kept)

    hub_app = create_app(Settings(data_dir=data))  # delete the wheel: its blobs lose their last reference
    with TestClient(hub_app) as client:
        gone = client.delete(f"/api/v1/projects/alice/demo-env/files/{wheel.name}", headers=basic(token))
        assert gone.status_code == 200, gone.text
    hub_app.state.hub.db.dispose()
    keep = runner.invoke(app, ["admin", "gc", "--grace-hours", "0", "--keep-deleted", "--data-dir", str(data)])
    assert keep.exit_code == 0 and "2 referenced" in keep.output and all(p.exists() for p in kept)
    freed = runner.invoke(app, ["admin", "gc", "--grace-hours", "0", "--data-dir", str(data)])
    assert freed.exit_code == 0 and "2 unreferenced blob(s)" in freed.output, freed.output
    assert not any(p.exists() for p in kept)


def test_gc_refuses_bad_input(tmp_path: Path) -> None:
    negative = runner.invoke(app, ["admin", "gc", "--grace-hours", "-1", "--data-dir", str(tmp_path)])
    assert negative.exit_code == 2 and "grace-hours" in negative.output
    bad_storage = runner.invoke(app, ["admin", "gc", "--storage-url", "ftp://x/y", "--data-dir", str(tmp_path)])
    assert bad_storage.exit_code == 1 and "not supported" in bad_storage.output


def test_serve_documents_the_access_log_switch() -> None:
    result = runner.invoke(app, ["serve", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "--access-log" in result.output and "--no-access-log" in result.output
    assert "one line per request" in result.output


def _requests_logged(tmp_path: Path, *flags: str) -> str:
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "hub_server.cli.vf_hub", "serve", "--port", str(port),
                                "--data-dir", str(tmp_path / "hub"), *flags], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/simple/no-such-env/").status_code == 404:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "vf-hub serve did not start"
            time.sleep(0.1)
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=30)
    return output.decode()


@pytest.mark.slow
def test_serve_logs_requests_unless_told_not_to(tmp_path: Path) -> None:
    assert '"GET /simple/no-such-env/ HTTP/1.1" 404' in _requests_logged(tmp_path)
    quiet = _requests_logged(tmp_path, "--no-access-log")
    assert "Application startup complete" in quiet and "/simple/no-such-env/" not in quiet


def test_verify_reports_and_quarantines_a_corrupt_blob_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("VF_HUB_DATABASE_URL", "VF_HUB_STORAGE_URL"):  # this test corrupts a file in the blob folder
        monkeypatch.delenv(variable, raising=False)
    data = tmp_path / "hub"
    token = _create_user(data, "alice")
    hub_app = create_app(Settings(data_dir=data))
    wheel = make_wheel(tmp_path, "demo-env", "0.1.0")
    with TestClient(hub_app) as client:
        assert client.post("/legacy/", data=upload_form(wheel, "demo-env", "0.1.0"),
                           files={"content": (wheel.name, wheel.read_bytes())}, headers=basic(token)).status_code == 200
    hub_app.state.hub.db.dispose()
    clean = runner.invoke(app, ["admin", "verify", "--data-dir", str(data)])
    assert clean.exit_code == 0 and "2 blob(s) re-hashed: 2 intact, 0 damaged" in clean.output, clean.output
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    blob = data / "blobs" / blob_key(sha)
    blob.write_bytes(b"flipped" + blob.read_bytes()[7:])
    dry = runner.invoke(app, ["admin", "verify", "--dry-run", "--data-dir", str(data)])
    assert dry.exit_code == 1 and f"corrupt {sha}" in dry.output and "dry run: nothing marked" in dry.output
    done = runner.invoke(app, ["admin", "verify", "--data-dir", str(data)])
    assert done.exit_code == 1 and f"corrupt {sha} (its bytes hash to" in done.output and "quarantined" in done.output
    assert blob.exists()  # marked, not deleted


def test_verify_refuses_bad_input(tmp_path: Path) -> None:
    bad_storage = runner.invoke(app, ["admin", "verify", "--storage-url", "ftp://x/y", "--data-dir", str(tmp_path)])
    assert bad_storage.exit_code == 1 and "not supported" in bad_storage.output
    unknown = runner.invoke(app, ["admin", "verify", "--grace-hours", "1", "--data-dir", str(tmp_path)])
    assert unknown.exit_code == 2 and "No such option" in unknown.output
