"""Real sandboxes for every test: the local backend with its default isolation, on a root of its own.

Every test's backend is closed at the end and the root must then hold no
sandbox: a leak fails the test that caused it. A module that sets
``TIERS = BOTH_TIERS`` runs each of its tests on the bubblewrap and the gVisor
tier; without runsc (or root) the gVisor ones skip, or fail under ``CI=true``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sandbox_fleets import kube_fleet, leftovers

from verifiers.sandboxes import AsyncSandboxClient, CreateSandboxRequest, LocalBackend, LocalBackendConfig
from verifiers.sandboxes.local.config import Tier


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "tier" in metafunc.fixturenames:
        metafunc.parametrize("tier", getattr(metafunc.module, "TIERS", ("bubblewrap",)))


def require_tier(tier: Tier) -> None:
    """Skip (fail under CI=true) a gVisor test where the tier cannot run."""
    missing = None
    if tier == "gvisor" and shutil.which("runsc") is None:
        missing = "runsc is not installed: run `bash scripts/setup_sandbox.sh` (apt-get install -y runsc)"
    elif tier == "gvisor" and os.geteuid() != 0:
        missing = "the gVisor tier needs root"
    if missing and os.environ.get("CI") == "true":
        pytest.fail(missing)
    if missing:
        pytest.skip(missing)


@pytest.fixture(scope="session")
def sandbox_root() -> Iterator[Path]:
    if shutil.which("bwrap") is None:
        pytest.fail("bubblewrap is not installed: run `bash scripts/setup_sandbox.sh` first")
    root = Path("/var/tmp") / f"vf-sbx-tests-{os.getpid()}"
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
async def backend(sandbox_root: Path, tier: Tier) -> AsyncIterator[LocalBackend]:
    require_tier(tier)
    root = sandbox_root if tier == "bubblewrap" else sandbox_root / tier
    local = LocalBackend(LocalBackendConfig(root_dir=root, tier=tier))
    yield local
    await local.close()
    assert leftovers(root) == [], "a sandbox outlived its test"


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
                     sandbox_root: Path, tier: Tier) -> AsyncIterator[AsyncSandboxClient]:
    """The contract suite's client: the same tests against the local (each tier) and the Kubernetes backend."""
    if request.param == "kubernetes" and tier != "bubblewrap":
        pytest.skip("n/a: the Kubernetes fleet's executors run the default tier (covered by the bubblewrap run)")
    if request.param == "local":
        yield AsyncSandboxClient(backend)
        return
    async with kube_fleet(sandbox_root / "kube") as kube:
        yield AsyncSandboxClient(kube)
