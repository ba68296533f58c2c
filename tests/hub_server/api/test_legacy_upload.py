"""The upload API's refusals (registry.md §6.5-6.7): auth, scopes, digests, names, versions, sizes, archives."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from hub_server import Settings, create_app
from hub_server.context import Hub
from hub_server.db import File, Owner, Project, Token
from hub_server.services import accounts
from hub_server.testing.dists import (
    make_gzip_bomb,
    make_sdist,
    make_wheel,
    metadata_text,
    upload_form,
)
from tests.hub_server.conftest import basic

Upload = Callable[..., httpx.Response]


def _nothing_stored(hub: Hub) -> bool:
    with hub.db.read() as session:
        no_rows = session.scalar(select(func.count(File.id))) == 0
    return no_rows and list(hub.storage.staging_dir().iterdir()) == []


def _token(hub: Hub, user: str, permission: str, *, project: str | None = None, owner: str | None = None,
           expires: dt.timedelta | None = dt.timedelta(days=1)) -> str:
    with hub.db.write() as session:
        holder = accounts.get_owner(session, user)
        scope = accounts.get_owner(session, owner) if owner else None
        return accounts.issue_token(session, holder, permission, expires_in=expires, scope_owner=scope,
                                    scope_project=project)


def test_upload_creates_the_project_under_the_tokens_user(hub: Hub, make_user: Callable[..., str],
                                                          upload: Upload, tmp_path: Path) -> None:
    token = make_user("alice")
    response = upload(token, make_wheel(tmp_path, "Demo_Env", "0.1.0"), "Demo_Env", "0.1.0")
    assert response.status_code == 200, response.text
    with hub.db.read() as session:
        assert session.scalars(select(Token)).one().last_used_at is not None
    with hub.db.read() as session:
        project = session.scalar(select(Project))
        assert project is not None and (project.name, project.normalized, project.owner.name) == (
            "Demo_Env", "demo-env", "alice")


def test_wrong_digest_is_refused_and_nothing_is_stored(hub: Hub, make_user: Callable[..., str], upload: Upload,
                                                       tmp_path: Path) -> None:  # §6.5
    token = make_user("alice")
    wheel = make_wheel(tmp_path, "demo-env", "0.1.0")
    response = upload(token, wheel, "demo-env", "0.1.0", sha256_digest="0" * 64)
    assert response.status_code == 400 and "sha256 digest supplied does not match" in response.text
    response = upload(token, wheel, "demo-env", "0.1.0", sha256_digest="", blake2_256_digest="", md5_digest="")
    assert response.status_code == 400 and "include at least one" in response.text
    assert _nothing_stored(hub)


def test_credentials_and_scopes(hub: Hub, make_user: Callable[..., str], upload: Upload,
                                tmp_path: Path) -> None:  # §6.6
    alice, _bob = make_user("alice"), make_user("bob")
    wheel = make_wheel(tmp_path, "demo-env", "0.1.0")
    assert upload(alice, wheel, "demo-env", "0.1.0").status_code == 200
    v2 = make_wheel(tmp_path, "demo-env", "0.2.0")

    missing = upload(None, v2, "demo-env", "0.2.0")
    assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Basic")
    assert upload("vfh_000000000000_" + "a" * 43, v2, "demo-env", "0.2.0").status_code == 403
    assert upload(alice[:-1] + ("A" if alice[-1] != "A" else "B"), v2, "demo-env", "0.2.0").status_code == 403
    other_project = _token(hub, "alice", "publish", project="other-env")
    assert upload(other_project, v2, "demo-env", "0.2.0").status_code == 403
    read_only = _token(hub, "alice", "read")
    assert upload(read_only, v2, "demo-env", "0.2.0").status_code == 403
    expired = _token(hub, "alice", "publish", expires=dt.timedelta(seconds=-1))
    response = upload(expired, v2, "demo-env", "0.2.0")
    assert response.status_code == 403 and "expired" in response.text
    revoked = _token(hub, "alice", "publish")
    with hub.db.write() as session:
        session.scalars(select(Token)).all()[-1].revoked_at = dt.datetime.now(dt.timezone.utc)
    assert upload(revoked, v2, "demo-env", "0.2.0").status_code == 403
    bob_token = _token(hub, "bob", "publish")
    response = upload(bob_token, v2, "demo-env", "0.2.0")  # wrong owner
    assert response.status_code == 403 and "may not upload" in response.text
    scoped = _token(hub, "alice", "publish", project="demo-env")
    assert upload(scoped, v2, "demo-env", "0.2.0").status_code == 200


def test_owner_in_the_url_must_match(hub: Hub, make_user: Callable[..., str], upload: Upload,
                                     tmp_path: Path) -> None:
    alice, _ = make_user("alice"), make_user("bob")
    wheel = make_wheel(tmp_path, "demo-env", "0.1.0")
    assert upload(alice, wheel, "demo-env", "0.1.0", url="/bob/legacy/").status_code == 403
    assert upload(alice, wheel, "demo-env", "0.1.0", url="/nobody/legacy/").status_code == 404
    assert upload(alice, wheel, "demo-env", "0.1.0", url="/alice/legacy").status_code == 200


@pytest.mark.parametrize(("filename", "name", "version", "message"), [
    ("demo_env-0.1.0-py3-none-any.whl", "other-env", "0.1.0", "is for 'demo-env'"),
    ("demo_env-0.1.0-py3-none-any.whl", "demo-env", "0.2.0", "does not match the file"),
    ("demo_env-1.0+x-py3-none-any.whl", "demo-env", "1.0+x", "local versions"),
    ("../../demo_env-0.1.0-py3-none-any.whl", "demo-env", "0.1.0", "invalid distribution filename"),
    ("dir/demo_env-0.1.0-py3-none-any.whl", "demo-env", "0.1.0", "invalid distribution filename"),
    ("demo_env-0.1.0.zip", "demo-env", "0.1.0", "only .whl and .tar.gz"),
    ("-bad-0.1.0.tar.gz", "-bad", "0.1.0", "invalid"),
    ("demo_env-0.1.0-py3-none-any.whl", "demo-env\n", "0.1.0", "invalid project name"),  # `$` matched before \n
])
def test_bad_names_versions_and_filenames(hub: Hub, make_user: Callable[..., str], client: TestClient,
                                          tmp_path: Path, filename: str, name: str, version: str,
                                          message: str) -> None:  # §6.7
    token = make_user("alice")
    wheel = make_wheel(tmp_path, "demo-env", "0.1.0")
    form = upload_form(wheel, name, version)
    response = client.post("/legacy/", data=form, files={"content": (filename, wheel.read_bytes())},
                           headers=basic(token))
    assert response.status_code == 400 and message in response.text, response.text
    assert _nothing_stored(hub)


def test_oversize_is_refused_while_streaming(tmp_path: Path) -> None:  # §6.7
    app = create_app(Settings(data_dir=tmp_path / "hub", max_file_size=1000))
    hub: Hub = app.state.hub
    with hub.db.write() as session:
        _, token = accounts.create_user(session, "alice", None)
    big = make_wheel(tmp_path, "demo-env", "0.1.0", body="# " + "x" * 5000 + "\n")
    with TestClient(app) as client:
        response = client.post("/legacy/", data=upload_form(big, "demo-env", "0.1.0"),
                               files={"content": (big.name, big.read_bytes())}, headers=basic(token))
    assert response.status_code == 400 and "larger than" in response.text
    assert _nothing_stored(hub)
    hub.db.dispose()


def test_malformed_bodies_and_archives(hub: Hub, make_user: Callable[..., str], client: TestClient,
                                       upload: Upload, tmp_path: Path) -> None:
    token = make_user("alice")
    junk = tmp_path / "demo_env-0.1.0-py3-none-any.whl"
    junk.write_bytes(b"PK\x03\x04 not really a zip")
    assert "not a valid wheel" in upload(token, junk, "demo-env", "0.1.0").text
    response = client.post("/legacy/", content=b"name=x", headers={**basic(token),
                           "Content-Type": "application/x-www-form-urlencoded"})
    assert response.status_code == 400 and "multipart/form-data" in response.text
    response = client.post("/legacy/", data={"name": "demo-env"}, files={"other": ("x", b"y")}, headers=basic(token))
    assert response.status_code == 400 and "no complete 'content'" in response.text
    broken = b"--B\r\nContent-Disposition: form-data; name=\"content\"; filename=\"a.whl\"\r\n\r\npartial"
    response = client.post("/legacy/", content=broken, headers={**basic(token),
                           "Content-Type": "multipart/form-data; boundary=B"})
    assert response.status_code == 400
    bad_meta = make_wheel(tmp_path / "m", "demo-env", "0.1.0", metadata=metadata_text("demo-env", "0.1.0",
                                                                                      requires_python="not a spec"))
    assert "invalid core metadata" in upload(token, bad_meta, "demo-env", "0.1.0").text
    assert _nothing_stored(hub)


def test_reserved_project_names_cannot_be_created(make_user: Callable[..., str], upload: Upload,
                                                  tmp_path: Path) -> None:
    token = make_user("alice")
    response = upload(token, make_wheel(tmp_path, "numpy", "99.0"), "numpy", "99.0")
    assert response.status_code == 400 and "reserved" in response.text


def test_immutability_identical_noop_conflict_and_tombstone(hub: Hub, make_user: Callable[..., str],
                                                           upload: Upload, tmp_path: Path) -> None:
    token = make_user("alice")
    sdist = make_sdist(tmp_path / "a", "demo-env", "0.1.0")
    assert upload(token, sdist, "demo-env", "0.1.0").status_code == 200
    again = upload(token, sdist, "demo-env", "0.1.0")
    assert again.status_code == 200 and "nothing changed" in again.text
    other = make_sdist(tmp_path / "b", "demo-env", "0.1.0", summary="different bytes")
    conflict = upload(token, other, "demo-env", "0.1.0")
    assert conflict.status_code == 400 and "File already exists" in conflict.text
    with hub.db.write() as session:
        session.scalars(select(File)).one().deleted_at = dt.datetime.now(dt.timezone.utc)
    reused = upload(token, sdist, "demo-env", "0.1.0")
    assert reused.status_code == 400 and "previously used" in reused.text


def test_failed_logins_are_rate_limited(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "hub", failed_auth_per_minute=3))
    wheel = make_wheel(tmp_path, "demo-env", "0.1.0")
    with TestClient(app) as client:
        codes = [client.post("/legacy/", data=upload_form(wheel, "demo-env", "0.1.0"),
                             files={"content": (wheel.name, wheel.read_bytes())},
                             headers=basic("vfh_000000000000_" + "a" * 43)).status_code for _ in range(5)]
        public_read = client.get("/simple/", headers=basic("wrong"))
    assert codes == [403, 403, 403, 429, 429]
    assert public_read.status_code == 200  # a read path serves bad credentials as anonymous, limited or not
    app.state.hub.db.dispose()


def test_writes_are_rate_limited_per_user(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "hub", write_rate_per_minute=2))
    hub: Hub = app.state.hub
    with hub.db.write() as session:
        _, token = accounts.create_user(session, "alice", None)
    with TestClient(app) as client:
        codes = []
        for i in range(3):
            wheel = make_wheel(tmp_path, "demo-env", f"0.{i}")
            codes.append(client.post("/legacy/", data=upload_form(wheel, "demo-env", f"0.{i}"),
                                     files={"content": (wheel.name, wheel.read_bytes())},
                                     headers=basic(token)).status_code)
    assert codes == [200, 200, 429]
    with hub.db.read() as session:
        assert session.scalar(select(func.count(Owner.id))) == 1
    hub.db.dispose()


def test_a_gzip_bomb_sdist_is_refused_after_the_unpacked_limit(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "hub", max_sdist_unpacked_size=1024 * 1024))
    hub: Hub = app.state.hub
    with hub.db.write() as session:
        _, token = accounts.create_user(session, "alice", None)
    bomb = make_gzip_bomb(tmp_path, "demo-env", "0.1.0", unpacked=32 * 1024 * 1024)
    with TestClient(app) as client:
        response = client.post("/legacy/", data=upload_form(bomb, "demo-env", "0.1.0"),
                               files={"content": (bomb.name, bomb.read_bytes())}, headers=basic(token))
    assert response.status_code == 400, response.text
    assert "demo_env-0.1.0.tar.gz unpacked is larger than this Hub's limit of 1048576 bytes" in response.text
    assert _nothing_stored(hub)
    hub.db.dispose()


@pytest.mark.parametrize("url", ["/legacy/", "/alice/legacy/", "/bob/legacy/"])
def test_uploading_to_someone_elses_private_project_does_not_reveal_it(
        hub: Hub, make_user: Callable[..., str], upload: Upload, tmp_path: Path, url: str) -> None:
    alice, bob = make_user("alice"), make_user("bob")
    assert upload(alice, make_wheel(tmp_path, "secret-env", "0.1.0"), "secret-env", "0.1.0").status_code == 200
    with hub.db.write() as session:
        session.scalars(select(Project)).one().private = True
    v2 = make_wheel(tmp_path / "2", "secret-env", "0.2.0")
    response = upload(bob, v2, "secret-env", "0.2.0", url=url)
    assert "alice/secret-env" not in response.text and "belongs to" not in response.text, response.text
    if url == "/alice/legacy/":
        # exactly what a project alice does not have answers
        never = upload(bob, make_wheel(tmp_path / "3", "never-env", "0.1.0"), "never-env", "0.1.0", url=url)
        assert (response.status_code, response.text) == (
            never.status_code, never.text.replace("never-env", "secret-env"))
    else:
        assert response.status_code == 400 and "the project name 'secret-env' is not available" in response.text
    with hub.db.read() as session:
        assert session.scalar(select(func.count(File.id))) == 1
