"""Real sandboxes for every test: the local backend with its default isolation, on a root of its own.

Every test's backend is closed at the end and the root must then hold no
sandbox: a leak fails the test that caused it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sandbox_fleets import kube_fleet, leftovers

from verifiers.sandboxes import AsyncSandboxClient, CreateSandboxRequest, LocalBackend, LocalBackendConfig


@pytest.fixture(scope="session")
def sandbox_root() -> Iterator[Path]:
    if shutil.which("bwrap") is None:
        pytest.fail("bubblewrap is not installed: run `bash scripts/setup_sandbox.sh` first")
    root = Path("/var/tmp") / f"vf-sbx-tests-{os.getpid()}"
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
async def backend(sandbox_root: Path) -> AsyncIterator[LocalBackend]:
    local = LocalBackend(LocalBackendConfig(root_dir=sandbox_root))
    yield local
    await local.close()
    assert leftovers(sandbox_root) == [], "a sandbox outlived its test"


@pytest.fixture
def client(backend: LocalBackend) -> AsyncSandboxClient:
    return AsyncSandboxClient(backend)


@pytest.fixture
def make_sandbox(client: AsyncSandboxClient):
    """``await make_sandbox(**request_fields) -> id`` of a running sandbox."""

    async def make(**fields: object) -> str:
        sandbox = await client.create(CreateSandboxRequest(**fields))
        await client.wait_for_creation(sandbox.id, timeout=30)
        return sandbox.id

    return make


@pytest.fixture(params=["local", "kubernetes"])
async def any_client(request: pytest.FixtureRequest, backend: LocalBackend,
                     sandbox_root: Path) -> AsyncIterator[AsyncSandboxClient]:
    """The contract suite's client: the same tests against the local and the Kubernetes backend."""
    if request.param == "local":
        yield AsyncSandboxClient(backend)
        return
    async with kube_fleet(sandbox_root / "kube") as kube:
        yield AsyncSandboxClient(kube)
