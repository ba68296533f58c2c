"""The registry.md §6 acceptance list with the real clients: twine, ``pip --isolated``, ``uv`` (UV_NO_CONFIG=1).

One Hub on 127.0.0.1 serves the whole module; each test uses its own project names, so tests
do not depend on each other's order.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI, Request, Response

from hub_server import Settings, create_app
from hub_server.context import Hub
from hub_server.install_commands import InstallTarget, pip_requirement, uv_command
from hub_server.services import accounts
from hub_server.storage import blob_key
from hub_server.testing.dists import make_sdist, make_wheel
from tests.hub_server.clients import installed, new_venv, pip_install, static_index, twine, uv_install
from tests.hub_server.conftest import LiveServer, bearer
from tests.hub_server.scale import overwrite_blob

pytestmark = pytest.mark.slow


@dataclass
class Env:
    """The module's Hub: URL, tokens, the app's state, and the paths every request asked for."""

    url: str
    hub: Hub
    alice: str
    bob: str
    dists: Path
    requests: list[str] = field(default_factory=list)

    @property
    def legacy(self) -> str:
        return f"{self.url}/legacy/"

    def index(self, owner: str | None = None) -> str:
        return f"{self.url}/{owner}/simple/" if owner else f"{self.url}/simple/"

    def publish(self, name: str, *versions: str, **meta: object) -> list[Path]:
        files = []
        for version in versions:
            out = self.dists / name / version
            files += [make_wheel(out, name, version, **meta), make_sdist(out, name, version, **meta)]
        twine(self.legacy, self.alice, *files)
        return files


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    root = tmp_path_factory.mktemp("hub")
    app: FastAPI = create_app(Settings(data_dir=root / "data"))
    seen: list[str] = []

    @app.middleware("http")
    async def record(request: Request, call_next):  # type: ignore[no-untyped-def]
        seen.append(f"{request.method} {request.url.path}")
        response: Response = await call_next(request)
        return response

    hub: Hub = app.state.hub
    with hub.db.write() as session:
        _, alice = accounts.create_user(session, "alice", dt.timedelta(days=1))
        _, bob = accounts.create_user(session, "bob", dt.timedelta(days=1))
    with LiveServer(app) as url:
        yield Env(url, hub, alice, bob, root / "dists", seen)
    hub.db.dispose()


def _simple_json(env: Env, name: str) -> dict:  # type: ignore[type-arg]
    response = httpx.get(f"{env.index()}{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    response.raise_for_status()
    return response.json()  # type: ignore[no-any-return]


# -- uploads -----------------------------------------------------------------------------------
def test_twine_uploads_with_and_without_trailing_slash(env: Env) -> None:  # §6.1, §6.2
    wheel = make_wheel(env.dists / "slash", "slash-env", "0.1.0")
    sdist = make_sdist(env.dists / "slash", "slash-env", "0.1.0")
    twine(env.legacy, env.alice, wheel)
    twine(f"{env.url}/legacy", env.alice, sdist)
    assert {f["filename"] for f in _simple_json(env, "slash-env")["files"]} == {wheel.name, sdist.name}


def test_reupload_identical_is_a_noop_and_other_bytes_are_refused(env: Env, tmp_path: Path) -> None:  # §6.3
    [wheel, _] = env.publish("same-env", "0.1.0")
    twine(env.legacy, env.alice, wheel)  # identical: exit 0
    other = make_wheel(tmp_path, "same-env", "0.1.0", body="VALUE = 2\n")
    done = twine(env.legacy, env.alice, other, check=False)
    assert done.returncode != 0
    assert "400" in done.stdout + done.stderr and "File already exists" in done.stdout + done.stderr


def test_deleted_filename_can_never_be_reused(env: Env) -> None:  # §6.4
    [wheel, _] = env.publish("gone-env", "0.1.0")
    deleted = httpx.delete(f"{env.url}/api/v1/projects/alice/gone-env/files/{wheel.name}", headers=bearer(env.alice))
    assert deleted.status_code == 200
    done = twine(env.legacy, env.alice, wheel, check=False)
    assert done.returncode != 0 and "previously used" in done.stdout + done.stderr


def test_twine_with_a_bad_token_fails(env: Env) -> None:  # §6.6 (the rest in test_legacy)
    wheel = make_wheel(env.dists / "denied", "denied-env", "0.1.0")
    done = twine(env.legacy, "vfh_000000000000_" + "x" * 43, wheel, check=False)
    assert done.returncode != 0 and "403" in done.stdout + done.stderr


def test_parallel_twine_uploads_to_one_new_project(env: Env) -> None:  # §6.18
    out = env.dists / "many"
    wheels = [make_wheel(out, "many-env", f"0.{i}.0") for i in range(20)]
    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(lambda w: twine(env.legacy, env.alice, w, check=False), wheels))
    assert [r.returncode for r in results] == [0] * 20
    page = _simple_json(env, "many-env")
    assert len(page["files"]) == 20 and len(page["versions"]) == 20


def test_twine_retries_a_transient_500_and_gets_200(env: Env, tmp_path: Path) -> None:  # §6.20
    app = create_app(Settings(data_dir=tmp_path / "flaky"))
    failures = {"left": 1}

    @app.middleware("http")
    async def fail_once_after_storing(request: Request, call_next):  # type: ignore[no-untyped-def]
        response: Response = await call_next(request)  # the upload is fully processed and stored
        if request.url.path.startswith("/legacy") and failures["left"]:
            failures["left"] -= 1
            return Response("injected failure", status_code=500)
        return response

    with app.state.hub.db.write() as session:
        _, token = accounts.create_user(session, "carol", dt.timedelta(days=1))
    wheel = make_wheel(tmp_path / "d", "flaky-env", "0.1.0")
    with LiveServer(app) as url:
        done = twine(f"{url}/legacy/", token, wheel)
    assert "Retry 1 of 5" in done.stdout + done.stderr
    app.state.hub.db.dispose()


# -- installs ----------------------------------------------------------------------------------
@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_exact_version_and_normalised_name_install(env: Env, tmp_path: Path, installer: str) -> None:  # §6.8, 6.9
    if not _published(env, "demo-env"):
        env.publish("demo-env", "0.1.0", "0.2.0")
    install = pip_install if installer == "pip" else uv_install
    python = new_venv(tmp_path / "v")
    install(python, "--index-url", env.index(), "demo-env==0.1.0")
    assert installed(python, "demo-env") == "0.1.0"
    install(python, "--index-url", env.index("alice"), "Demo_Env==0.2.0")
    assert installed(python, "demo-env") == "0.2.0"
    fresh = new_venv(tmp_path / "w")
    install(fresh, "--index-url", env.index(), "demo-env")
    assert installed(fresh, "demo-env") == "0.2.0"


def _published(env: Env, name: str) -> bool:
    return httpx.get(f"{env.index()}{name}/").status_code == 200


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_impossible_requires_python_is_refused(env: Env, tmp_path: Path, installer: str) -> None:  # §6.9
    if not _published(env, "future-env"):
        env.publish("future-env", "1.0.0", requires_python=">=9.99")
    install = pip_install if installer == "pip" else uv_install
    done = install(new_venv(tmp_path / "v"), "--index-url", env.index(), "future-env", check=False)
    assert done.returncode != 0


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_yank_and_unyank(env: Env, tmp_path: Path, installer: str) -> None:  # §6.10
    name = f"yank-{installer}"
    env.publish(name, "0.1.0", "0.2.0")
    yank = httpx.post(f"{env.url}/api/v1/projects/alice/{name}/versions/0.2.0/yank", json={"reason": "bad build"},
                      headers=bearer(env.alice))
    assert yank.status_code == 200
    install = pip_install if installer == "pip" else uv_install
    index = ("--index-url", env.index())
    python = new_venv(tmp_path / "a")
    install(python, *index, name)
    assert installed(python, name) == "0.1.0"
    pinned = install(python, *index, f"{name}==0.2.0")
    assert installed(python, name) == "0.2.0" and "bad build" in pinned.stdout + pinned.stderr
    assert install(new_venv(tmp_path / "b"), *index, f"{name}>=0.2", check=False).returncode != 0
    httpx.post(f"{env.url}/api/v1/projects/alice/{name}/versions/0.2.0/unyank", headers=bearer(env.alice))
    fresh = new_venv(tmp_path / "c")
    install(fresh, *index, name)
    assert installed(fresh, name) == "0.2.0"


def test_corrupted_blob_is_refused_by_both_clients_and_hashes_pin(env: Env, tmp_path: Path) -> None:  # §6.11
    [wheel, _] = env.publish("hashed-env", "0.1.0")
    sha = next(f["hashes"]["sha256"] for f in _simple_json(env, "hashed-env")["files"] if f["filename"] == wheel.name)
    requirements = tmp_path / "req.txt"
    requirements.write_text(f"hashed-env==0.1.0 --hash=sha256:{sha}\n")
    python = new_venv(tmp_path / "ok")
    pip_install(python, "--index-url", env.index(), "--require-hashes", "--no-deps", "-r", str(requirements))
    assert installed(python, "hashed-env") == "0.1.0"

    # Other bytes that are still a valid wheel, so the hash check (not the unzip) is what catches it.
    evil = make_wheel(tmp_path / "evil", "hashed-env", "0.1.0", body="VALUE = 666\n").read_bytes()
    overwrite_blob(env.hub.storage, blob_key(sha), evil)
    # A small blob's bytes are hashed by the Hub itself as it loads them (503); a streamed one's are not, so
    # streaming every blob leaves the clients' own hash checks as what refuses the bytes.
    env.hub.blobs.max_blob = 16
    bad_pip = pip_install(new_venv(tmp_path / "p"), "--index-url", env.index(), "hashed-env==0.1.0", check=False)
    assert bad_pip.returncode != 0 and "DO NOT MATCH THE HASHES" in bad_pip.stdout + bad_pip.stderr
    bad_uv = uv_install(new_venv(tmp_path / "u"), "--index-url", env.index(), "hashed-env==0.1.0", check=False)
    assert bad_uv.returncode != 0 and "Hash mismatch" in bad_uv.stdout + bad_uv.stderr


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_clients_fetch_core_metadata_before_the_wheel(env: Env, tmp_path: Path, installer: str) -> None:  # §6.13
    name = f"meta-{installer}"
    [wheel, _] = env.publish(name, "0.1.0")
    start = len(env.requests)
    install = pip_install if installer == "pip" else uv_install
    install(new_venv(tmp_path / "v"), "--index-url", env.index(), "--only-binary", ":all:", f"{name}==0.1.0")
    gets = [r for r in env.requests[start:] if r.startswith("GET /files/")]
    metadata = next(i for i, r in enumerate(gets) if r.endswith(f"{wheel.name}.metadata"))
    assert metadata < next(i for i, r in enumerate(gets) if r.endswith(wheel.name))


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_extra_index_404s_unknown_names_and_deps_come_from_the_primary(env: Env, tmp_path: Path,
                                                                        installer: str) -> None:  # §6.16, 6.17
    name = f"needs-dep-{installer}"
    env.publish(name, "0.1.0", requires=("dep-only-elsewhere>=1",))
    primary = {"dep-only-elsewhere": [make_wheel(tmp_path / "w", "dep-only-elsewhere", "1.0")],
               "numpy": [make_wheel(tmp_path / "w", "numpy", "99.0")]}
    install = pip_install if installer == "pip" else uv_install
    with static_index(tmp_path / "pypi", primary) as pypi:
        python = new_venv(tmp_path / "v")
        install(python, "--index-url", pypi, "--extra-index-url", env.index(), name, "numpy")
    assert installed(python, name) == "0.1.0"
    assert installed(python, "dep-only-elsewhere") == "1.0" and installed(python, "numpy") == "99.0"


def test_quarantine_hides_a_project_from_root_and_page(env: Env) -> None:  # §6.22
    env.publish("quiet-env", "0.1.0")
    assert "quiet-env" in httpx.get(env.index()).text
    from hub_server.services.catalog import set_quarantined

    with env.hub.db.write() as session:
        set_quarantined(session, "quiet-env", True)
    assert "quiet-env" not in httpx.get(env.index()).text
    assert httpx.get(f"{env.index()}quiet-env/").status_code == 404


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_private_environment_installs_with_a_token_and_is_404_without(env: Env, tmp_path: Path,
                                                                      installer: str) -> None:
    name = f"private-{installer}"
    created = httpx.post(f"{env.url}/api/v1/projects", json={"owner": "alice", "name": name, "private": True},
                         headers=bearer(env.alice))
    assert created.status_code == 201
    [wheel, _] = env.publish(name, "0.1.0")
    info = httpx.get(f"{env.url}/api/v1/projects/alice/{name}", headers=bearer(env.alice)).json()
    file = next(f for f in info["versions"][0]["files"] if f["filename"] == wheel.name)
    target = InstallTarget(env.url, "alice", name, "0.1.0", file["url"], file["sha256"], private=True)
    python = new_venv(tmp_path / "v")
    if installer == "pip":
        assert pip_install(python, pip_requirement(target), check=False).returncode != 0  # anonymous: 404
        pip_install(python, pip_requirement(target, env.alice))
    else:
        assert uv_install(python, *uv_command(target)[3:], check=False).returncode != 0
        uv_install(python, *uv_command(target, env.alice)[3:])
    assert installed(python, name) == "0.1.0"
