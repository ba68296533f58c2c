"""``vf-hub pull``: the sdist of a version, checked and unpacked without ever writing outside the folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from hub_server.cli.vf_hub import app as cli
from hub_server.client import HubClient
from hub_server.client.pull import pull, unpack_sdist
from hub_server.context import Hub
from hub_server.errors import BadRequest, NotFound
from hub_server.names import EnvRef
from hub_server.storage import LocalStorage, blob_key
from hub_server.testing.dists import make_wheel, tar_gz
from tests.hub_server.web.envdists import env_sdist, publish

runner = CliRunner()


@pytest.fixture
def token(make_user: Callable[[str], str], upload: Callable[..., httpx.Response], tmp_path: Path) -> str:
    value = make_user("alice")
    publish(upload, value, tmp_path / "dists", "demo-env", "0.1.0")
    publish(upload, value, tmp_path / "dists", "demo-env", "0.2.0")
    return value


def test_pull_the_latest_and_an_exact_version(live_url: str, token: str, tmp_path: Path) -> None:
    with HubClient(live_url) as client:
        version, folder = pull(client, EnvRef("alice", "demo-env"), tmp_path / "latest")
        assert version == "0.2.0" and folder == tmp_path / "latest"
        assert 'version = "0.2.0"' in (folder / "pyproject.toml").read_text()
        assert sorted(p.name for p in folder.iterdir()) == ["PKG-INFO", "README.md", "demo_env.py", "pyproject.toml"]
    result = runner.invoke(cli, ["pull", "alice/demo-env@0.1.0", "--hub", live_url, "--dest", str(tmp_path / "old")])
    assert result.exit_code == 0, result.output
    assert f"Pulled alice/demo-env@0.1.0 into {tmp_path / 'old'}" in result.output
    assert 'version = "0.1.0"' in (tmp_path / "old" / "pyproject.toml").read_text()


def test_pull_refuses_bad_references_missing_versions_and_existing_folders(live_url: str, token: str,
                                                                           tmp_path: Path) -> None:
    bad = runner.invoke(cli, ["pull", "not a ref", "--hub", live_url])
    assert bad.exit_code == 2 and "expected OWNER/NAME" in bad.output
    missing = runner.invoke(cli, ["pull", "alice/demo-env@9.0", "--hub", live_url, "--dest", str(tmp_path / "x")])
    assert missing.exit_code == 1 and "no version 9.0" in missing.output
    (tmp_path / "taken").mkdir()
    taken = runner.invoke(cli, ["pull", "alice/demo-env", "--hub", live_url, "--dest", str(tmp_path / "taken")])
    assert taken.exit_code == 2 and "already exists" in taken.output


def test_a_version_without_an_sdist_says_so(live_url: str, upload: Callable[..., httpx.Response],
                                            make_user: Callable[[str], str], tmp_path: Path) -> None:
    owner = make_user("bob")
    assert upload(owner, make_wheel(tmp_path, "wheel-only", "1.0.0"), "wheel-only", "1.0.0").status_code == 200
    with HubClient(live_url) as client, pytest.raises(NotFound, match="no source distribution"):
        pull(client, EnvRef("bob", "wheel-only"), tmp_path / "out")


def test_a_corrupted_blob_is_refused_before_unpacking(live_url: str, token: str, hub: Hub, tmp_path: Path) -> None:
    if not isinstance(hub.storage, LocalStorage):
        pytest.skip("n/a on S3: corrupts a file in the local blob folder")
    with HubClient(live_url) as client:
        sdist = next(f for v in client.info("alice", "demo-env")["versions"] for f in v["files"]
                     if f["filename"] == "demo_env-0.2.0.tar.gz")
        blob = hub.storage.locate(blob_key(sdist["sha256"]))
        blob.write_bytes(blob.read_bytes()[:-10] + b"0123456789")
        # A small blob's bytes are hashed by the Hub itself (503); a streamed one's are not: the client checks.
        hub.blobs.max_blob = 16
        with pytest.raises(BadRequest, match="does not match its sha256"):
            pull(client, EnvRef("alice", "demo-env", "0.2.0"), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_hostile_sdist_on_the_hub_is_not_unpacked(live_url: str, upload: Callable[..., httpx.Response],
                                                    make_user: Callable[[str], str], tmp_path: Path) -> None:
    owner = make_user("eve")
    hostile = env_sdist(tmp_path / "dists", "evil-env", "0.1.0", extra={"../escaped.txt": b"gotcha"})
    assert upload(owner, hostile, "evil-env", "0.1.0").status_code == 200  # the index stores it as bytes
    work = tmp_path / "work"
    work.mkdir()
    with HubClient(live_url) as client, pytest.raises(BadRequest, match="unsafe path"):
        pull(client, EnvRef("eve", "evil-env"), work / "evil")
    assert list(work.iterdir()) == [] and not (tmp_path / "escaped.txt").exists()


@pytest.mark.parametrize(
    "members, links, message",
    [
        ({"pkg-1.0/ok.txt": b"x", "pkg-1.0/../../escaped.txt": b"x"}, {}, "unsafe path"),
        ({"/tmp/absolute.txt": b"x"}, {}, "unsafe path"),
        ({"pkg-1.0/a.txt": b"x"}, {"pkg-1.0/link": "/etc/passwd"}, "link or special file"),
        ({"pkg-1.0/a.txt": b"x", "other-1.0/b.txt": b"x"}, {}, "one top-level folder"),
        ({"pkg-1.0\\..\\x.txt": b"x"}, {}, "unsafe path"),
    ],
)
def test_unsafe_archives_are_refused_and_leave_nothing(tmp_path: Path, members: dict[str, bytes],
                                                       links: dict[str, str], message: str) -> None:
    archive = tar_gz(tmp_path / "in" / "pkg-1.0.tar.gz", members, links)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(BadRequest, match=message):
        unpack_sdist(archive, out / "pkg")
    assert list(out.iterdir()) == []


def test_unpack_refuses_garbage_and_an_existing_destination(tmp_path: Path) -> None:
    garbage = tmp_path / "pkg-1.0.tar.gz"
    garbage.write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(BadRequest, match="could not be unpacked"):
        unpack_sdist(garbage, tmp_path / "dest")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg-1.0.tar.gz"]
    good = tar_gz(tmp_path / "good" / "pkg-1.0.tar.gz", {"pkg-1.0/a.txt": b"a"})
    assert (unpack_sdist(good, tmp_path / "dest") / "a.txt").read_text() == "a"
    with pytest.raises(BadRequest, match="already exists"):
        unpack_sdist(good, tmp_path / "dest")
