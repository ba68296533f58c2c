"""A per-task image (``image_dir``): a host directory or tar archive, read-only at /image in the sandbox."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError
from sandbox_fleets import BOTH_TIERS
from sandbox_hostcheck import slot_of

from verifiers.sandboxes import (
    AsyncSandboxClient,
    CreateSandboxRequest,
    LocalBackend,
    SandboxNotRunningError,
    SandboxPathError,
    SandboxStatus,
    SandboxUnavailableError,
)
from verifiers.sandboxes.kube import FakeKubeApi, KubernetesBackend
from verifiers.sandboxes.local.config import Tier

TIERS = BOTH_TIERS  # every test with a backend runs on the bubblewrap and the gVisor tier
_MODULE = "def answer():\n    return 42\n"


@pytest.fixture
def repo(sandbox_root: Path) -> Iterator[Path]:
    """A small repository in a directory every uid can reach (sandboxes run as uids of their own)."""
    path = sandbox_root.parent / f"vf-sbx-image-{os.getpid()}"
    (path / "pkg").mkdir(parents=True)
    path.chmod(0o755)
    (path / "pkg" / "__init__.py").write_text(_MODULE)
    (path / "README").write_text("the repository\n")
    for item in (path / "pkg", path / "pkg" / "__init__.py", path / "README"):
        item.chmod(0o777)  # writable by anyone on the host: only the read-only mount stops the sandbox
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _archive(repo: Path, name: str) -> Path:
    target = repo.parent / f"{repo.name}-{name}"
    with tarfile.open(target, "w:gz" if name.endswith("gz") else "w") as archive:
        archive.add(repo / "pkg", arcname="pkg")
        archive.add(repo / "README", arcname="README")
    return target


async def _check_read_only_image(client: AsyncSandboxClient, box: str,
                                 refusals: tuple[str, ...] = ("Read-only file system",)) -> None:
    run = await client.execute_command(box, "cat /image/README; PYTHONPATH=/image python3 -c "
                                            "'import pkg; print(pkg.answer())'")
    assert run.stdout == "the repository\n42\n", run.stderr
    for attempt in ("echo x > /image/new", "echo x >> /image/README", "rm /image/README", "mkdir /image/d"):
        refused = await client.execute_command(box, f"{attempt}; echo rc=$?")
        assert refused.stdout == "rc=1\n" and any(r in refused.stderr for r in refusals), attempt
    copied = await client.execute_command(box, "cp -r /image/pkg /workspace/ && echo changed >> pkg/__init__.py "
                                               "&& tail -n 1 pkg/__init__.py")
    assert copied.stdout == "changed\n"  # what the task must change it copies into its workspace


async def test_a_directory_image_is_visible_and_read_only(client: AsyncSandboxClient, make_sandbox,
                                                          repo: Path, tier: Tier) -> None:
    box = await make_sandbox(image_dir=str(repo))
    # gVisor's gofer refuses a write to its read-only bind as a permission error, not EROFS
    await _check_read_only_image(client, box, ("Read-only file system",) if tier == "bubblewrap" else
                                 ("Read-only file system", "Permission denied"))
    assert sorted(p.name for p in repo.iterdir()) == ["README", "pkg"]  # the host's copy untouched
    assert (repo / "README").read_text() == "the repository\n"


@pytest.mark.parametrize("name", ["image.tar", "image.tar.gz"])
async def test_an_archive_image_is_unpacked_onto_the_sandbox_disk(client: AsyncSandboxClient, make_sandbox,
                                                                  repo: Path, backend: LocalBackend,
                                                                  name: str) -> None:
    archive = _archive(repo, name)
    try:
        box = await make_sandbox(image_dir=str(archive))
        # unpacked as root, with tarfile's data filter dropping others' write bits: refused either way
        await _check_read_only_image(client, box, ("Read-only file system", "Permission denied"))
        unpacked = slot_of(backend.config.root_dir, box) / "files" / "image"
        assert (unpacked / "pkg" / "__init__.py").read_text() == _MODULE
    finally:
        archive.unlink()


async def test_bad_images_are_refused_at_create(client: AsyncSandboxClient, repo: Path, sandbox_root: Path) -> None:
    with pytest.raises(ValidationError, match="absolute host path"):
        CreateSandboxRequest(image_dir="relative/repo")
    with pytest.raises(SandboxPathError, match="does not exist"):
        await client.create(CreateSandboxRequest(image_dir=str(repo / "missing")))
    with pytest.raises(SandboxPathError, match="neither a directory nor a tar archive"):
        await client.create(CreateSandboxRequest(image_dir=str(repo / "README")))
    fake = repo.parent / f"{repo.name}-fake.tar.gz"
    fake.write_bytes(b"not a tar archive")
    closed = repo / "closed"
    closed.mkdir(mode=0o700)
    try:
        with pytest.raises(SandboxPathError, match="not a readable tar archive"):
            await client.create(CreateSandboxRequest(image_dir=str(fake)))
        with pytest.raises(SandboxPathError, match="searchable"):
            await client.create(CreateSandboxRequest(image_dir=str(closed)))
    finally:
        fake.unlink()
    assert await client.list() == []


async def test_an_archive_escaping_its_tree_fails_the_sandbox_not_the_host(client: AsyncSandboxClient,
                                                                          repo: Path, sandbox_root: Path) -> None:
    evil = repo.parent / f"{repo.name}-evil.tar"
    with tarfile.open(evil, "w") as archive:
        entry = tarfile.TarInfo("../../escaped")
        entry.size = 3
        archive.addfile(entry, io.BytesIO(b"bad"))
    try:
        box = await client.create(CreateSandboxRequest(image_dir=str(evil)))
        with pytest.raises(SandboxNotRunningError, match="failed to start: image_dir .* could not be unpacked"):
            await client.wait_for_creation(box.id, timeout=30)
        assert (await client.get(box.id)).status is SandboxStatus.ERROR
        assert not list(sandbox_root.rglob("escaped")) and not (sandbox_root.parent / "escaped").exists()
    finally:
        evil.unlink()


async def test_an_archive_larger_than_the_disk_is_a_clear_error(client: AsyncSandboxClient, repo: Path) -> None:
    big = repo.parent / f"{repo.name}-big.tar"
    with tarfile.open(big, "w") as archive:
        entry = tarfile.TarInfo("blob")
        entry.size = 40 << 20
        archive.addfile(entry, io.BytesIO(bytes(entry.size)))
    try:
        box = await client.create(CreateSandboxRequest(image_dir=str(big), disk_size_gb=0.02))
        with pytest.raises(SandboxNotRunningError, match="failed to start: image_dir .* does not fit"):
            await client.wait_for_creation(box.id, timeout=30)
        assert (await client.get(box.id)).status is SandboxStatus.ERROR
    finally:
        big.unlink()


async def test_the_kubernetes_backend_refuses_an_image_dir(repo: Path) -> None:
    kube = KubernetesBackend(FakeKubeApi([]), "key")
    try:
        with pytest.raises(SandboxUnavailableError, match="cannot mount image_dir"):
            await kube.create(CreateSandboxRequest(image_dir=str(repo)))
    finally:
        await kube.close()
