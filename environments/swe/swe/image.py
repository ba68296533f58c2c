"""Each instance's sandbox image: a host directory the sandbox sees read-only at ``/image``.

An image holds what a rollout of one instance needs and nothing more: ``repo/``, the project with the
instance's bug already applied, and ``pytest/``, the pytest modules compiled by the interpreter the sandbox
runs. The local backend bind-mounts it (``CreateSandboxRequest.image_dir``): nothing is uploaded or unpacked
per rollout; the sandbox copies ``repo/`` into the workspace, and grading builds its own tree from it.

Why per instance and not per project: a sandbox can read all of ``/image``, so a pristine tree there would
hand the model the fix (``diff -r``). The bug patches change only library code (the data tests check it),
so the buggy tree's test files are the pristine ones.

Images are built on first use, once per process, under the temporary directory (sandboxes run as uids of
their own, so the tree is readable by everyone), and removed when the process exits. pytest is unpacked and
compiled once and hard-linked into every image: its modules then load from ``.pyc`` files in the sandbox,
where bytecode is never written.
"""

from __future__ import annotations

import atexit
import functools
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import Any

from swe.instances import repo_archive
from swe.pytest_bundle import extract_to
from verifiers.errors import SandboxError

SANDBOX_PYTHON = "/usr/bin/python3"  # the local backend runs the host's /usr: this compiles for it


class ImageStore:
    """Instance images under ``root``, built on demand (thread-safe) and reused for the process's lifetime."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()

    def image_dir(self, instance: dict[str, Any]) -> str:
        """The absolute host path of ``instance``'s image, built first if this process has none yet.

        Raises:
            SandboxError: the image could not be built (no ``patch`` or ``/usr/bin/python3``, a patch
                that does not apply, a full disk): the sandbox cannot be set up.
        """
        target = self.root / instance["instance_id"]
        with self._lock:
            if not target.is_dir():
                try:
                    self._build(instance, target)
                except (OSError, subprocess.CalledProcessError, tarfile.TarError) as error:
                    detail = getattr(error, "stderr", None) or error
                    raise SandboxError(f"could not build the image of {instance['instance_id']}: {detail}") from None
        return str(target)

    def _pytest(self) -> Path:
        """pytest unpacked and compiled once, the source every image hard-links."""
        shared = self.root / ".pytest"
        if not shared.is_dir():
            staging = Path(tempfile.mkdtemp(dir=self.root))
            extract_to(staging)
            subprocess.run([SANDBOX_PYTHON, "-m", "compileall", "-q", str(staging)], check=True, capture_output=True,
                           text=True)
            staging.rename(shared)
        return shared

    def _build(self, instance: dict[str, Any], target: Path) -> None:
        staging = Path(tempfile.mkdtemp(dir=self.root))
        try:
            with tarfile.open(fileobj=io.BytesIO(repo_archive(instance["project"])), mode="r:gz") as tar:
                tar.extractall(staging / "repo", filter="data")
            subprocess.run(["patch", "-p1", "--quiet", "--no-backup-if-mismatch", "-d", str(staging / "repo")],
                           input=instance["bug_patch"], text=True, check=True, capture_output=True)
            shutil.copytree(self._pytest(), staging / "pytest", copy_function=os.link)
            _readable_by_all(staging)
            staging.rename(target)  # complete or absent: a failed build leaves nothing that looks built
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _readable_by_all(tree: Path) -> None:
    for directory, _, names in os.walk(tree):
        os.chmod(directory, 0o755)
        for name in names:
            path = os.path.join(directory, name)
            os.chmod(path, os.stat(path).st_mode & 0o777 | 0o444)


@functools.cache
def default_store() -> ImageStore:
    """This process's store, in a fresh directory under the temporary directory, removed at exit."""
    root = Path(tempfile.mkdtemp(prefix="swe-images-"))
    root.chmod(0o755)
    atexit.register(shutil.rmtree, root, True)
    return ImageStore(root)


def instance_image(instance: dict[str, Any]) -> str:
    """The host path of ``instance``'s image in this process's store (blocking: call it in a thread)."""
    return default_store().image_dir(instance)
