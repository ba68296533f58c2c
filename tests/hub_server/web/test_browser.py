"""The web UI in a real browser: Debian's headless Chromium, driven by Playwright, against a Hub on 127.0.0.1.

Click-through: home → search → environment page → install tabs and the copy button, asserting the
exact commands; screenshots go to ``test-artifacts/`` (git-ignored) for a person to look at.
Chromium comes from ``scripts/setup_browser.sh`` (apt); no browser is ever downloaded.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hub_server.client import HubClient, build_dists
from tests.hub_server.conftest import bearer
from tests.hub_server.web.envdists import env_dists

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[3]
ARTIFACTS = REPO / "test-artifacts"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is missing: run scripts/setup_browser.sh"),
]
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="the playwright package is missing (pip install -e '.[test]')")


@pytest.fixture
def browser_page(tmp_path: Path) -> Iterator[Any]:
    """A page in a fresh Chromium profile; fails the test on any script error or CSP violation."""
    errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), headless=True, args=FLAGS,
            viewport={"width": 1280, "height": 900})
        context.grant_permissions(["clipboard-read", "clipboard-write"])
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        yield page
        context.close()
    assert errors == []


def _seed(url: str, token: str, tmp_path: Path) -> dict[str, Any]:
    """reverse-text (its real package) plus two made-up neighbours, and two pushed results."""
    with HubClient(url, token) as client:
        for dist in build_dists(REPO / "environments" / "reverse_text", tmp_path / "dist", isolated=False):
            client.upload(dist)
        for name, tag in (("wordle-lite", "games"), ("gsm-mini", "math")):
            for dist in env_dists(tmp_path / name, name, "0.3.0", tag=tag, summary=f"A small {tag} environment."):
                client.upload(dist)
        info = client.info("alice", "reverse-text")
    import httpx

    for model, reward in (("qwen3-0.6b", 0.412), ("gpt-4.1-mini", 0.871)):
        meta = {"model": model, "status": "complete", "avg_reward": reward, "std_reward": 0.08, "num_examples": 20,
                "rollouts_per_example": 3, "avg_metrics": {"lcs_reward": reward, "exact_match": reward - 0.2},
                "pass_at_k": {"1": reward - 0.1}, "date": dt.datetime.now(dt.timezone.utc).isoformat()}
        answer = httpx.post(f"{url}/api/v1/evals", headers=bearer(token), json={
            "project": "reverse-text", "version": "0.1.0", "metadata": meta, "summary": f"{model}: reward {reward}"})
        assert answer.status_code == 201, answer.text
    return info


def test_search_to_install_snippet(live_url: str, make_user: Callable[[str], str], browser_page: Any,
                                   tmp_path: Path) -> None:
    info = _seed(live_url, make_user("alice"), tmp_path)
    wheel = next(f for f in info["versions"][0]["files"] if f["filename"].endswith(".whl"))
    uv = f"uv pip install reverse-text==0.1.0 --extra-index-url {live_url}/alice/simple/ --index-strategy first-index"
    sha = wheel["sha256"]
    pip = f"pip install 'reverse-text @ {live_url}/files/{sha}/{wheel['filename']}#sha256={sha}'"
    page = browser_page
    ARTIFACTS.mkdir(exist_ok=True)

    page.goto(f"{live_url}/")
    assert "3 environments" in page.inner_text("#results-title")
    page.fill("#search-input", "reverse")
    page.click("#search-button")
    page.wait_for_url("**/search?q=reverse")
    assert "1 result for “reverse”" in page.inner_text("#results-title")
    page.screenshot(path=str(ARTIFACTS / "hub-search.png"), full_page=True)

    page.click("a.card-title:has-text('reverse-text')")
    page.wait_for_url(f"{live_url}/alice/reverse-text")
    assert page.inner_text("#env-title") == "alice/reverse-text"
    assert page.is_visible("#install-uv") and not page.is_visible("#install-pip")
    assert page.inner_text("#install-uv").strip() == uv
    page.click("button[data-tab='pip']")
    assert page.is_visible("#install-pip") and not page.is_visible("#install-uv")
    assert page.inner_text("#install-pip").strip() == pip
    page.click("button[data-copy='install-pip']")
    page.wait_for_function("document.querySelector(\"button[data-copy='install-pip']\").textContent === 'Copied'")
    assert page.evaluate("navigator.clipboard.readText()") == pip
    # the page's other parts, as a person sees them
    assert "num_train_examples" in page.inner_text("#arguments") and "lcs_reward" in page.inner_text("#metrics")
    board = page.inner_text("#leaderboard")
    assert board.index("gpt-4.1-mini") < board.index("qwen3-0.6b") and "0.871" in board
    page.screenshot(path=str(ARTIFACTS / "hub-environment.png"), full_page=True)

    page.click("#env-title a")  # the owner's page
    page.wait_for_url(f"{live_url}/alice")
    assert page.inner_text("#owner-name") == "alice" and page.is_visible("text=wordle-lite")
    page.screenshot(path=str(ARTIFACTS / "hub-owner.png"), full_page=True)


def test_a_results_rollouts_and_their_transcripts(live_url: str, make_user: Callable[[str], str], browser_page: Any,
                                                  tmp_path: Path) -> None:
    """Leaderboard → the result's page → filter to the errored rollout → its error; → a passed one's transcript
    (tool call, tool result, reply), with text that would be markup or script shown as written, never run."""
    import httpx

    token = make_user("alice")
    with HubClient(live_url, token) as client:
        for dist in build_dists(REPO / "environments" / "reverse_text", tmp_path / "dist", isolated=False):
            client.upload(dist)
    hostile = "<img src=x onerror=\"window.ran=1\"> **bold** [red]x[/]"

    def rollout(example: int, reward: float | None, error: str | None = None) -> dict[str, Any]:
        call = {"id": f"call_{example}", "name": "reverse", "arguments": f'{{"text": "word{example}"}}'}
        return {"example_id": example, "reward": reward, "metrics": {"lcs_reward": reward}, "error": error,
                "answer": f"{example}drow",
                "prompt": [{"role": "user", "content": f"Reverse word{example}"}],
                "completion": [{"role": "assistant", "tool_calls": [call]},
                               {"role": "tool", "content": f"{example}drow", "tool_call_id": f"call_{example}"},
                               {"role": "assistant", "content": f"{example}drow {hostile}"}]}

    meta = {"model": "tool-model", "status": "complete", "avg_reward": 0.5, "std_reward": 0.5, "num_examples": 3,
            "rollouts_per_example": 1, "avg_metrics": {"lcs_reward": 0.5}, "pass_at_k": {"1": 0.5}}
    answer = httpx.post(f"{live_url}/api/v1/evals", headers=bearer(token), json={
        "project": "reverse-text", "version": "0.1.0", "metadata": meta,
        "rollouts": [rollout(0, 1.0), rollout(1, 0.0), rollout(2, None, "ModelError: 503 <b>upstream</b>")]})
    assert answer.status_code == 201, answer.text
    page = browser_page
    ARTIFACTS.mkdir(exist_ok=True)

    page.goto(f"{live_url}/alice/reverse-text")
    page.click("#leaderboard a:has-text('tool-model')")
    page.wait_for_url(f"{live_url}/alice/reverse-text/evals/{answer.json()['id']}")
    assert page.locator("#rollout-list tbody tr").count() == 3
    filters = page.inner_text("#rollout-filter")
    assert all(f"{kind} {n}" in " ".join(filters.split()) for kind, n in (("all", 3), ("passed", 1), ("errored", 1)))
    page.click("#rollout-filter a:has-text('errored')")
    page.wait_for_url("**?show=errored")
    assert page.locator("#rollout-list tbody tr").count() == 1
    page.click("#rollout-list a")
    assert "ModelError: 503 <b>upstream</b>" in page.inner_text("#rollout-error")  # the tags as text
    page.go_back()
    page.click("#rollout-filter a:has-text('passed')")
    page.wait_for_url("**?show=passed")
    page.click("#rollout-list a")
    assert "example 0 · rollout 0" in page.inner_text("#rollout-title")
    transcript = page.inner_text("#transcript")
    for shown in ("Reverse word0", "tool call · call_0", 'reverse({"text": "word0"})', "tool result · call_0",
                  f"0drow {hostile}"):
        assert shown in transcript, transcript
    assert page.evaluate("window.ran") is None and page.locator("#transcript img").count() == 0
    assert "lcs_reward" in page.inner_text("#scores")
    page.screenshot(path=str(ARTIFACTS / "hub-rollout.png"), full_page=True)
    page.click("#rollout-nav a:has-text('next')")
    assert "example 1 · rollout 0" in page.inner_text("#rollout-title")
