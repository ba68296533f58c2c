"""The simple API: PEP 503 HTML / PEP 691 JSON by Accept, redirects, 404s, yank, metadata, privacy.

Covers registry.md §6.12, 6.13, 6.14, 6.15 and 6.22 in-process.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from hub_server.context import Hub
from hub_server.services import catalog
from hub_server.testing.dists import make_sdist, make_wheel
from tests.hub_server.conftest import basic, bearer

JSON = "application/vnd.pypi.simple.v1+json"
Upload = Callable[..., httpx.Response]


@pytest.fixture
def alice(make_user: Callable[..., str], upload: Upload, tmp_path: Path) -> str:
    token = make_user("alice")
    for version in ("0.1.0", "0.2.0"):
        for path in (make_wheel(tmp_path, "Demo_Env", version, requires_python=">=3.8,<4"),
                     make_sdist(tmp_path, "Demo_Env", version)):
            assert upload(token, path, "Demo_Env", version).status_code == 200
    return token


def test_json_page_has_pep_691_and_700_fields(client: TestClient, alice: str) -> None:
    response = client.get("/simple/demo-env/", headers={"Accept": JSON})
    assert response.headers["content-type"] == JSON and response.headers["vary"] == "Accept"
    page = response.json()
    assert page["meta"]["api-version"] == "1.1" and page["name"] == "demo-env"
    assert page["versions"] == ["0.1.0", "0.2.0"]
    wheel = next(f for f in page["files"] if f["filename"] == "Demo_Env-0.2.0-py3-none-any.whl")
    assert wheel["size"] > 0 and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z", wheel["upload-time"])
    assert wheel["requires-python"] == ">=3.8,<4" and wheel["yanked"] is False
    assert wheel["core-metadata"] == wheel["data-dist-info-metadata"] != False  # noqa: E712
    blob = client.get(wheel["url"]).content
    assert hashlib.sha256(blob).hexdigest() == wheel["hashes"]["sha256"]
    metadata = client.get(wheel["url"] + ".metadata")
    assert hashlib.sha256(metadata.content).hexdigest() == wheel["core-metadata"]["sha256"]  # §6.13
    assert b"Name: Demo_Env" in metadata.content
    sdist = next(f for f in page["files"] if f["filename"].endswith(".tar.gz"))
    assert sdist["core-metadata"] is False
    assert client.get(sdist["url"] + ".metadata").status_code == 404


def test_html_page_has_hashes_and_escaped_attributes(client: TestClient, alice: str) -> None:
    response = client.get("/simple/demo-env/")
    assert response.headers["content-type"].startswith("text/html") and response.headers["vary"] == "Accept"
    html = response.text
    assert '<meta name="pypi:repository-version" content="1.1">' in html
    assert html.count("#sha256=") == 4 and 'data-requires-python="&gt;=3.8,&lt;4"' in html
    assert html.count("data-core-metadata=") == 2 and html.count("data-dist-info-metadata=") == 2


@pytest.mark.parametrize(("accept", "expected"), [
    (None, "text/html"), ("*/*", "text/html"), ("text/html", "text/html"),
    ("application/vnd.pypi.simple.v1+html", "application/vnd.pypi.simple.v1+html"),
    ("application/vnd.pypi.simple.latest+json", JSON),
    (f"{JSON}, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01", JSON),  # pip
    ("text/html;q=0.5, application/vnd.pypi.simple.v1+json;q=0.9", JSON),
])
def test_content_negotiation(client: TestClient, alice: str, accept: str | None, expected: str) -> None:
    headers = {"Accept": accept} if accept else {}
    assert client.get("/simple/demo-env/", headers=headers).headers["content-type"].startswith(expected)


def test_unacceptable_media_type_is_406(client: TestClient, alice: str) -> None:
    response = client.get("/simple/demo-env/", headers={"Accept": "application/json"})
    assert response.status_code == 406 and JSON in response.text


def test_non_normalised_names_and_missing_slashes_redirect(client: TestClient, alice: str) -> None:  # §6.15
    for path, target in [("/simple/Demo_Env/", "/simple/demo-env/"), ("/simple/demo-env", "/simple/demo-env/"),
                         ("/simple", "/simple/"), ("/alice/simple/DEMO.env", "/alice/simple/demo-env/")]:
        response = client.get(path, follow_redirects=False)
        assert (response.status_code, response.headers["location"]) == (301, target)


def test_unknown_projects_and_owners_are_404(client: TestClient, alice: str) -> None:
    assert client.get("/simple/numpy/").status_code == 404
    assert client.get("/bob/simple/demo-env/").status_code == 404
    assert client.get("/simple/numpy/", headers=basic("vfh_bad")).status_code == 404  # bad creds: never 401/403


def test_root_and_owner_indexes_list_visible_projects(client: TestClient, alice: str) -> None:
    root = client.get("/simple/", headers={"Accept": JSON}).json()
    assert root["projects"] == [{"name": "Demo_Env"}]
    assert '<a href="demo-env/">Demo_Env</a>' in client.get("/alice/simple/").text
    assert client.get("/bob/simple/", headers={"Accept": JSON}).json()["projects"] == []


def test_private_projects_are_404_to_everyone_else(hub: Hub, client: TestClient, alice: str,
                                                   make_user: Callable[..., str]) -> None:
    bob = make_user("bob")
    assert client.patch("/api/v1/projects/alice/demo-env", json={"private": True},
                        headers=bearer(alice)).status_code == 200
    page = client.get("/simple/demo-env/", headers={**basic(alice), "Accept": JSON})
    assert page.status_code == 200 and page.headers["cache-control"] == "private, no-store"
    file_url = page.json()["files"][0]["url"]
    for headers in ({}, basic(bob), basic("vfh_000000000000_" + "a" * 43)):
        assert client.get("/simple/demo-env/", headers=headers).status_code == 404
        assert client.get(file_url, headers=headers).status_code == 404
        assert client.get(file_url + ".metadata", headers=headers).status_code == 404
        assert "Demo_Env" not in client.get("/simple/", headers=headers).text
    assert client.get(file_url, headers=basic(alice)).status_code == 200


def test_yanked_versions_are_marked_in_both_formats(hub: Hub, client: TestClient, alice: str) -> None:
    response = client.post("/api/v1/projects/alice/demo-env/versions/0.2.0/yank", json={"reason": "bad <build>"},
                           headers=bearer(alice))
    assert response.status_code == 200
    files = client.get("/simple/demo-env/", headers={"Accept": JSON}).json()["files"]
    assert {f["filename"]: f["yanked"] for f in files if "0.2.0" in f["filename"]} == {
        "Demo_Env-0.2.0-py3-none-any.whl": "bad <build>", "demo_env-0.2.0.tar.gz": "bad <build>"}
    assert client.get("/simple/demo-env/").text.count('data-yanked="bad &lt;build&gt;"') == 2


def test_quarantined_projects_disappear(hub: Hub, client: TestClient, alice: str) -> None:  # §6.22
    with hub.db.write() as session:
        catalog.set_quarantined(session, "demo-env", True)
    assert client.get("/simple/demo-env/").status_code == 404
    assert "Demo_Env" not in client.get("/simple/").text


def test_head_and_range_on_files(client: TestClient, alice: str) -> None:  # §6.14
    wheel = client.get("/simple/demo-env/", headers={"Accept": JSON}).json()["files"][0]
    head = client.head(wheel["url"])
    assert head.status_code == 200 and int(head.headers["content-length"]) == wheel["size"]
    assert head.headers["accept-ranges"] == "bytes" and "immutable" in head.headers["cache-control"]
    part = client.get(wheel["url"], headers={"Range": "bytes=0-99"})
    assert part.status_code == 206 and len(part.content) == 100
    assert part.content == client.get(wheel["url"]).content[:100]


def test_file_urls_need_the_right_hash_and_name(client: TestClient, alice: str) -> None:
    wheel = client.get("/simple/demo-env/", headers={"Accept": JSON}).json()["files"][0]
    sha, name = wheel["hashes"]["sha256"], wheel["filename"]
    assert client.get(f"/files/{'0' * 64}/{name}").status_code == 404
    assert client.get(f"/files/{sha}/other-0.1.0.tar.gz").status_code == 404
    assert client.get(f"/files/{sha}/..%2F..%2Fhub.sqlite3").status_code == 404
