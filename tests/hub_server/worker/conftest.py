"""The check image, built once per test session in a folder every sandbox uid can read."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hub_server.worker.image import build_image


@pytest.fixture(scope="session")
def check_image() -> Iterator[Path]:
    # not under pytest's tmp_path: its parents are private to root, and sandboxes run as uids of their own
    directory = Path(tempfile.mkdtemp(prefix="vf-check-image-", dir="/var/tmp"))
    directory.chmod(0o755)
    try:
        yield build_image(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
