"""A version whose sdist's ``pyproject.toml`` cannot be read fails its check (the package's fault, so the owner's
policy may yank it) before any sandbox starts; it used to end as ``error``, which nothing yanks."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
from pathlib import Path

from hub_server.db.checks import FAILED
from hub_server.services.server_checks import Claimed
from hub_server.storage import LocalStorage, blob_key
from hub_server.testing.dists import make_wheel
from hub_server.worker.loop import WorkerConfig, run_claimed
from tests.hub_server.web.envdists import env_sdist


def _store(storage: LocalStorage, path: Path) -> str:
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    copy = path.with_suffix(".copy")
    shutil.copy(path, copy)
    storage.put(blob_key(sha), copy)
    return sha


def test_a_pyproject_nested_past_the_parser_fails_the_check(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "blobs")
    wheel = make_wheel(tmp_path / "w", "demo-env", "0.1.0")
    sdist = env_sdist(tmp_path / "s", "demo-env", "0.1.0", pyproject="x = " + "[" * 50_000 + "]" * 50_000 + "\n")
    claimed = Claimed(id=1, kind="contract", project="demo-env", version="0.1.0", wheel_sha256=_store(storage, wheel),
                      wheel_filename=wheel.name, sdist=(_store(storage, sdist), sdist.name), eval_id=None)
    # no sandbox client: the verdict comes before one would be asked for
    status, summary, _ = asyncio.run(run_claimed(None, storage, None, WorkerConfig(image_dir=tmp_path),  # type: ignore[arg-type]
                                                 claimed))
    assert (status, summary) == (FAILED, "the version's sdist: its pyproject.toml is nested too deeply to parse")
