"""The web UI's pages, as a browser gets them: lists, search, environment and owner pages, sign-in."""

from __future__ import annotations

import datetime as dt
import html
import re
import shlex
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from hub_server.context import Hub
from hub_server.services import accounts
from hub_server.testing.dists import make_wheel, metadata_text
from tests.hub_server.conftest import bearer
from tests.hub_server.web.envdists import PYPROJECT, README, env_sdist, publish

EVIL_README = README.format(name="demo-env") + """
<script>document.title='owned'</script>

<img src="https://example.org/badge.svg" onerror="alert(1)"> <a href="javascript:alert(2)">click</a>
"""


@pytest.fixture
def alice(client: TestClient, make_user: Callable[[str], str], upload: Callable[..., httpx.Response],
          tmp_path: Path) -> str:
    token = make_user("alice")
    publish(upload, token, tmp_path, "demo-env", "0.1.0", readme=EVIL_README, tag="math")
    publish(upload, token, tmp_path, "demo-env", "0.2.0", tag="math", summary="Second <b>version</b>.")
    publish(upload, token, tmp_path, "other-env", "1.0.0", tag="games", summary="Plays games.")
    return token


def text_of(page: str) -> str:
    """The visible text of a page, whitespace collapsed (tags dropped, entities decoded)."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_home_lists_environments_with_tags_and_search_works(client: TestClient, alice: str) -> None:
    home = client.get("/")
    assert home.status_code == 200 and home.headers["content-type"].startswith("text/html")
    assert "2 environments" in text_of(home.text) and 'href="/alice/demo-env"' in home.text
    found = client.get("/search", params={"q": "games"})
    assert "1 result for “games”" in text_of(found.text)
    assert "other-env" in found.text and "demo-env" not in found.text
    tagged = client.get("/search", params={"tag": "math"})
    assert 'href="/alice/demo-env"' in tagged.text and "other-env" not in tagged.text
    assert "No environments match" in client.get("/search", params={"q": "zzz"}).text


def test_environment_page_shows_readme_details_install_versions_and_files(client: TestClient, alice: str) -> None:
    page = client.get("/alice/demo-env")
    assert page.status_code == 200
    text = text_of(page.text)
    assert "v0.2.0" in text and "Second <b>version</b>." in text  # the summary is text, escaped
    assert "<b>version</b>" not in page.text
    assert "num_examples int 100 How many examples to use." in text  # pyproject description + README type/default
    assert "exact_match 1.0 1.0 when the reply equals the answer (weight 1)." in text
    assert "vf-eval demo-env -n 20 -r 3 -m MODEL -b BASE_URL" in text
    base = "http://testserver"
    uv = (f"uv pip install demo-env==0.2.0 --extra-index-url {base}/alice/simple/ --index-strategy first-index")
    assert uv in text and "vf-hub install alice/demo-env@0.2.0" in text
    assert f"pip install 'demo-env @ {base}/files/" in text and "demo_env-0.2.0-py3-none-any.whl#sha256=" in text
    assert "demo_env-0.2.0.tar.gz" in text and "latest" in text
    assert page.headers["content-security-policy"].startswith("default-src 'self'")
    assert page.headers["x-frame-options"] == "DENY"


def test_a_hostile_eval_default_is_dropped_from_the_shown_command(
        client: TestClient, make_user: Callable[[str], str], upload: Callable[..., httpx.Response],
        tmp_path: Path) -> None:
    token = make_user("mallory")
    pyproject = PYPROJECT.format(name="xss-env", version="0.1.0", tag="x").replace(
        "num_examples = 20", 'num_examples = "5; rm -rf ~ #"')
    sdist = env_sdist(tmp_path, "xss-env", "0.1.0", pyproject=pyproject)
    for dist in (make_wheel(tmp_path, "xss-env", "0.1.0"), sdist):
        assert upload(token, dist, "xss-env", "0.1.0").status_code == 200
    page = client.get("/mallory/xss-env/versions/0.1.0")
    command = html.unescape(re.search(r'id="eval-command"><code>(.*?)</code>', page.text).group(1))
    assert shlex.split(command) == ["vf-eval", "xss-env", "-r", "3", "-m", "MODEL", "-b", "BASE_URL"]
    assert "rm -rf" not in command
    assert "num_examples = '5; rm -rf ~ #' is not an integer; left out of the command." in text_of(page.text)


def test_the_readme_is_sanitised_on_the_page(client: TestClient, alice: str) -> None:
    page = client.get("/alice/demo-env/versions/0.1.0").text
    assert "Environment Arguments" in page and "v0.1.0" in page and "latest is v0.2.0" in page
    assert "document.title" not in page and "onerror" not in page and "javascript:" not in page
    assert '<img src="https://example.org/badge.svg">' in page
    assert page.count("<script") == 1  # the page's own script tag (hub.js), nothing from the README


def test_downloads_are_counted_and_shown(client: TestClient, alice: str) -> None:
    info = client.get("/api/v1/projects/alice/demo-env").json()
    wheel = next(f for f in info["versions"][1]["files"] if f["packagetype"] == "bdist_wheel")
    for _ in range(3):
        assert client.get(wheel["url"]).status_code == 200
    assert client.head(wheel["url"]).status_code == 200  # HEAD, ranges and metadata do not count
    assert client.get(wheel["url"], headers={"Range": "bytes=0-9"}).status_code == 206
    assert client.get(wheel["url"] + ".metadata").status_code == 200
    page = client.get("/alice/demo-env").text
    assert re.search(r'id="downloads-total">3<', page)
    home = text_of(client.get("/").text)
    assert "demo-env" in home and "↓ 3" in home


def test_leaderboard_on_the_page(client: TestClient, alice: str) -> None:
    meta = {"model": "gpt-x", "status": "complete", "avg_reward": 0.875, "std_reward": 0.1, "num_examples": 20,
            "rollouts_per_example": 3, "avg_metrics": {"exact_match": 0.8}, "pass_at_k": {"1": 0.75}}
    pushed = client.post("/api/v1/evals", json={"project": "demo-env", "version": "0.1.0", "metadata": meta,
                                                "summary": "<script>x</script> table"}, headers=bearer(alice))
    assert pushed.status_code == 201, pushed.text
    page = client.get("/alice/demo-env")
    text = text_of(page.text)
    assert "gpt-x v0.1.0 · 20 × 3" in text and "0.875 ± 0.100" in text and "0.750" in text and "0.800" in text
    assert "alice owner" in text and "<script>x" not in page.text
    # the summary is on the result's own page (the leaderboard never loads it), escaped
    result = client.get(f"/alice/demo-env/evals/{pushed.json()['id']}")
    assert "&lt;script&gt;x&lt;/script&gt; table" in result.text and "<script>x" not in result.text


def test_owner_page_and_unknown_things_are_404_pages(client: TestClient, alice: str) -> None:
    owner = client.get("/alice")
    assert owner.status_code == 200 and "User" in owner.text and "other-env" in owner.text
    for path in ("/nobody", "/alice/no-env", "/bob/demo-env", "/alice/demo-env/versions/9.9",
                 "/alice/demo-env/versions/not..a..version"):
        missing = client.get(path)
        assert missing.status_code == 404 and "Not found" in missing.text, path


def test_long_lists_are_paged(client: TestClient, alice: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hub_server.web.routes.PAGE_SIZE", 1)
    first = text_of(client.get("/", params={"sort": "name"}).text)
    second = text_of(client.get("/", params={"sort": "name", "page": 2}).text)
    assert "alice/ demo-env" in first and "other-env" not in first and "page 1 of 2" in first
    assert "alice/ other-env" in second and "page 2 of 2" in second
    owner_first = client.get("/alice", params={"sort": "name"}).text
    owner_second = text_of(client.get("/alice", params={"sort": "name", "page": 2}).text)
    assert "2 environments" in text_of(owner_first) and 'href="?sort=name&page=2"' in owner_first
    assert "other-env" in owner_second and "demo-env" not in owner_second and "page 2 of 2" in owner_second
    assert client.get("/alice", params={"page": 0}).status_code == 422


def test_bad_query_parameters_are_refused(client: TestClient, alice: str) -> None:
    assert client.get("/", params={"page": 0}).status_code == 422
    assert client.get("/search", params={"q": "x" * 201}).status_code == 422
    assert client.get("/", params={"sort": "<script>"}).status_code == 200  # unknown sorts fall back


def test_private_environments_never_show_to_others(client: TestClient, alice: str, hub: Hub,
                                                   make_user: Callable[[str], str]) -> None:
    assert client.patch("/api/v1/projects/alice/other-env", json={"private": True},
                        headers=bearer(alice)).status_code == 200
    bob = make_user("bob")
    for headers in ({}, bearer(bob)):
        assert "other-env" not in client.get("/", headers=headers).text
        assert "other-env" not in client.get("/alice", headers=headers).text
        assert "other-env" not in client.get("/search", params={"q": "games"}, headers=headers).text
        assert client.get("/alice/other-env", headers=headers).status_code == 404
    assert "other-env" in client.get("/", headers=bearer(alice)).text
    page = client.get("/alice/other-env", headers=bearer(alice))
    assert page.status_code == 200 and "private" in page.text and "__token__:TOKEN@" in page.text


def test_signing_in_with_a_token_shows_private_environments(client: TestClient, alice: str, hub: Hub) -> None:
    client.patch("/api/v1/projects/alice/other-env", json={"private": True}, headers=bearer(alice))
    with hub.db.write() as session:
        user = accounts.get_owner(session, "alice")
        read_token = accounts.issue_token(session, user, "read", expires_in=dt.timedelta(days=1))
    assert "Sign in" in client.get("/login").text
    refused = client.post("/login", data={"token": "vfh_000000000000_" + "x" * 43})
    assert refused.status_code == 403 and "invalid" in refused.text and "vf_hub_token" not in refused.headers.get(
        "set-cookie", "")
    signed_in = client.post("/login", data={"token": read_token}, follow_redirects=False)
    assert signed_in.status_code == 303 and signed_in.headers["location"] == "/alice"
    cookie = signed_in.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    assert client.get("/alice/other-env").status_code == 200  # the cookie is sent from now on
    assert "Sign out" in client.get("/").text
    out = client.post("/logout", follow_redirects=False)
    assert out.status_code == 303 and 'vf_hub_token=""' in out.headers["set-cookie"]
    client.cookies.clear()
    assert client.get("/alice/other-env").status_code == 404
    assert client.post("/login", data={}).status_code == 422


def test_fixed_paths_still_win_over_pages(client: TestClient, alice: str) -> None:
    assert client.get("/simple/demo-env/").text.count("demo_env-") >= 4  # the index, not a page
    assert client.get("/alice/simple/", follow_redirects=False).status_code == 200
    assert client.get("/alice/simple", follow_redirects=False).status_code == 301
    assert client.get("/api/v1/projects/alice/demo-env").json()["latest"] == "0.2.0"
    assert client.get("/static/hub.css").headers["content-type"].startswith("text/css")
    assert client.get("/health").json() == {"status": "ok"}


def test_a_rst_readme_is_rendered_and_sanitised_on_the_page(client: TestClient, alice: str,
                                                            upload: Callable[..., httpx.Response],
                                                            tmp_path: Path) -> None:
    readme = ("Rst env\n=======\n\nReverses *text*.\n\n.. raw:: html\n\n   <script>document.title='owned'</script>\n\n"
              ".. include:: /etc/passwd\n\n`click <javascript:alert(2)>`_\n")
    metadata = metadata_text("rst-env", "0.1.0", description=readme).replace("text/markdown", "text/x-rst")
    wheel = make_wheel(tmp_path / "rst", "rst-env", "0.1.0", metadata=metadata)
    assert upload(alice, wheel, "rst-env", "0.1.0").status_code == 200
    page = client.get("/alice/rst-env").text
    assert "<h2>Rst env</h2>" in page and "<em>text</em>" in page
    assert "document.title" not in page and "root:" not in page and 'href="javascript' not in page
