"""The JSON API of the CLI: search, info, projects, yank, deletion, tokens."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from hub_server.testing.dists import make_sdist, make_wheel
from tests.hub_server.conftest import bearer

Upload = Callable[..., httpx.Response]


@pytest.fixture
def alice(make_user: Callable[..., str], upload: Upload, tmp_path: Path) -> str:
    token = make_user("alice")
    for version in ("0.1.0", "0.2.0rc1"):
        for path in (make_wheel(tmp_path, "demo-env", version, summary="Reverse some text", keywords="text,rl"),
                     make_sdist(tmp_path, "demo-env", version)):
            assert upload(token, path, "demo-env", version).status_code == 200
    return token


def test_info_lists_versions_files_and_safe_install_commands(client: TestClient, alice: str) -> None:
    info = client.get("/api/v1/projects/alice/Demo_Env").json()
    assert (info["owner"], info["name"], info["latest"]) == ("alice", "demo-env", "0.1.0")  # no pre-release
    assert [v["version"] for v in info["versions"]] == ["0.1.0", "0.2.0rc1"]
    assert info["index_url"] == "http://testserver/alice/simple/"
    assert "--index-strategy first-index" in info["install"]["uv"]
    assert "demo-env @ http://testserver/files/" in info["install"]["pip"] and "#sha256=" in info["install"]["pip"]
    assert client.get("/api/v1/projects/bob/demo-env").status_code == 404


def test_search_matches_name_summary_and_keywords(client: TestClient, alice: str) -> None:
    def names(q: str, **params: str) -> list[str]:
        found = client.get("/api/v1/projects", params={"q": q, **params}).json()["projects"]
        return [p["name"] for p in found]

    assert names("demo") == names("REVERSE") == names("rl") == ["demo-env"]
    assert names("nothing-like-it") == [] and names("", owner="bob") == []
    assert client.get("/api/v1/projects", params={"limit": 0}).status_code == 422


def test_create_project_private_then_conflicts(client: TestClient, make_user: Callable[..., str]) -> None:
    token = make_user("alice")
    created = client.post("/api/v1/projects", json={"owner": "alice", "name": "secret-env", "private": True},
                          headers=bearer(token))
    assert created.status_code == 201
    assert client.get("/api/v1/projects/alice/secret-env").status_code == 404
    assert client.get("/api/v1/projects/alice/secret-env", headers=bearer(token)).json()["private"] is True
    again = client.post("/api/v1/projects", json={"owner": "alice", "name": "Secret_Env"}, headers=bearer(token))
    assert again.status_code == 409 and "taken" in again.json()["detail"]
    other = client.post("/api/v1/projects", json={"owner": "bob", "name": "x-env"}, headers=bearer(token))
    assert other.status_code == 404
    assert client.post("/api/v1/projects", json={"owner": "alice", "name": "x"}).status_code == 401


def test_yank_needs_publish_rights_and_a_known_version(client: TestClient, alice: str,
                                                      make_user: Callable[..., str]) -> None:
    bob = make_user("bob")
    url = "/api/v1/projects/alice/demo-env/versions"
    assert client.post(f"{url}/0.1.0/yank", json={}, headers=bearer(bob)).status_code == 403
    assert client.post(f"{url}/9.9/yank", json={}, headers=bearer(alice)).status_code == 404
    assert client.post(f"{url}/0.1.0/yank", json={"reason": "x"}, headers=bearer(alice)).status_code == 200
    assert client.get("/api/v1/projects/alice/demo-env").json()["latest"] == "0.2.0rc1"
    assert client.post(f"{url}/0.1.0/unyank", headers=bearer(alice)).status_code == 200
    assert client.get("/api/v1/projects/alice/demo-env").json()["latest"] == "0.1.0"


def test_deleted_files_leave_the_index(client: TestClient, alice: str) -> None:
    name = "demo_env-0.1.0.tar.gz"
    assert client.delete(f"/api/v1/projects/alice/demo-env/files/{name}", headers=bearer(alice)).status_code == 200
    assert name not in client.get("/simple/demo-env/").text
    assert client.delete(f"/api/v1/projects/alice/demo-env/files/{name}", headers=bearer(alice)).status_code == 404


def test_tokens_created_listed_revoked_and_never_wider(client: TestClient, make_user: Callable[..., str]) -> None:
    token = make_user("alice")
    me = client.get("/api/v1/whoami", headers=bearer(token)).json()
    assert me == {"user": "alice", "permission": "publish", "scope_project": None}
    created = client.post("/api/v1/tokens", json={"permission": "read", "project": "demo-env", "expires_days": 1},
                          headers=bearer(token)).json()
    read_token = created["token"]
    assert client.get("/api/v1/whoami", headers=bearer(read_token)).json()["scope_project"] == "demo-env"
    wider = client.post("/api/v1/tokens", json={"permission": "publish"}, headers=bearer(read_token))
    assert wider.status_code == 403
    other_project = client.post("/api/v1/tokens", json={"project": "other"}, headers=bearer(read_token))
    assert other_project.status_code == 403
    listed = client.get("/api/v1/tokens", headers=bearer(token)).json()["tokens"]
    assert [t["id"] for t in listed][0] == created["id"] and all("token" not in t for t in listed)
    assert [t["last_used_at"] for t in listed] == [None, None]  # no upload yet
    assert client.delete(f"/api/v1/tokens/{created['id']}", headers=bearer(token)).status_code == 200
    assert client.get("/api/v1/whoami", headers=bearer(read_token)).status_code == 403
    assert client.delete("/api/v1/tokens/000000000000", headers=bearer(token)).status_code == 404
    bad = client.post("/api/v1/tokens", json={"permission": "admin"}, headers=bearer(token))
    assert bad.status_code == 400 and "permission must be one of" in bad.json()["detail"]
