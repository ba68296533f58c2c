"""A release's README is rendered once, when the upload creates the release, and page views read it back."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from hub_server.context import Hub
from hub_server.db import Database
from hub_server.db.models import Release
from hub_server.services import release_readme
from hub_server.testing.dists import make_wheel
from tests.hub_server.web.envdists import README, env_sdist


class Renders:
    """Counts calls of ``release_readme.render`` (the only way a README gets rendered)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = release_readme.render

        def counted(description: str, content_type: str) -> release_readme.RenderedReadme:
            self.calls += 1
            return original(description, content_type)

        monkeypatch.setattr(release_readme, "render", counted)


def _stored(hub: Hub) -> list[tuple[Any, ...]]:
    with hub.db.read() as session:
        rows = session.execute(select(Release.version, Release.readme_renderer, Release.readme_html)
                               .order_by(Release.id))
        return [tuple(row) for row in rows]


def _publish(upload: Callable[..., httpx.Response], token: str, tmp_path: Path, version: str,
             readme: str) -> None:
    wheel = make_wheel(tmp_path / version, "demo-env", version, description=readme)
    sdist = env_sdist(tmp_path / version, "demo-env", version, readme=readme)
    for dist in (wheel, sdist):
        assert upload(token, dist, "demo-env", version).status_code == 200


def test_the_upload_that_creates_a_release_renders_its_readme_once_and_views_only_read_it(
        client: TestClient, hub: Hub, make_user: Callable[[str], str], upload: Callable[..., httpx.Response],
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    renders = Renders(monkeypatch)
    _publish(upload, make_user("alice"), tmp_path, "0.1.0", README.format(name="demo-env"))
    assert renders.calls == 1  # the wheel created the release; the sdist of the same release did not render again
    [(version, renderer, html)] = _stored(hub)
    assert (version, renderer) == ("0.1.0", release_readme.RENDERER_VERSION) and "<h3>Metrics</h3>" in html
    for _ in range(3):
        page = client.get("/alice/demo-env/versions/0.1.0")
        assert page.status_code == 200 and "<h3>Environment Arguments</h3>" in page.text
        assert "Rows in the evaluation split." in page.text  # the README's tables, read back from the row
    assert renders.calls == 1


@pytest.mark.parametrize("stale", [{"readme_html": None, "readme_tables": None, "readme_renderer": None},
                                   {"readme_renderer": release_readme.RENDERER_VERSION - 1},
                                   {"readme_tables": "not json"}])
def test_a_release_without_a_current_stored_readme_is_rendered_on_its_first_view_then_stored(
        client: TestClient, hub: Hub, make_user: Callable[[str], str], upload: Callable[..., httpx.Response],
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stale: dict[str, Any]) -> None:
    _publish(upload, make_user("alice"), tmp_path, "0.1.0", README.format(name="demo-env"))
    with hub.db.write() as session:  # as a release uploaded before migration 0005 (or by an older renderer)
        session.execute(update(Release).values(**stale))
    renders = Renders(monkeypatch)
    for _ in range(3):
        page = client.get("/alice/demo-env")
        assert page.status_code == 200 and "Rows in the evaluation split." in page.text
    assert renders.calls == 1
    assert _stored(hub)[0][1] == release_readme.RENDERER_VERSION


def test_a_pathological_readme_costs_its_upload_a_bounded_render_and_its_views_nothing(
        client: TestClient, hub: Hub, make_user: Callable[[str], str], upload: Callable[..., httpx.Response],
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hostile = "[" * 1_000_000  # ~23 s of markdown-it per parse without the cap and the CPU budget
    _publish(upload, make_user("mallory"), tmp_path, "0.1.0", hostile)
    [(_version, _renderer, html)] = _stored(hub)
    assert html.startswith('<pre class="readme-plain">[[[')  # over the budget: shown as text
    monkeypatch.setattr(release_readme, "render", None)  # a view that tried to render would fail
    page = client.get("/mallory/demo-env/versions/0.1.0")
    assert page.status_code == 200 and '<pre class="readme-plain">[[[' in page.text


def test_migration_0005_leaves_existing_releases_to_be_rendered_on_first_view(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path}/hub.sqlite3")
    db.migrate("0004")
    now = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    with db.write_engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO owners (id, name, kind, created_at) VALUES (1, 'alice', 'user', :t)"),
                     {"t": now})
        conn.execute(sa.text("INSERT INTO projects (id, owner_id, name, normalized, private, quarantined, created_at)"
                             " VALUES (1, 1, 'p', 'p', 0, 0, :t)"), {"t": now})
        conn.execute(sa.text(
            "INSERT INTO releases (id, project_id, version, canonical_version, yanked, yanked_reason, summary,"
            " description, description_content_type, keywords, created_at)"
            " VALUES (1, 1, '1.0', '1.0', 0, '', '', :d, 'text/markdown', '', :t)"),
            {"d": "# Old\n\n## Metrics\n\n| Metric | Weight |\n|---|---|\n| `m` | 1 |\n", "t": now})
    db.migrate()
    with db.read() as session:
        assert _stored_row(session) == (None, None)
        rendered = release_readme.release_readme(db, session, 1)
    assert "<h1>Old</h1>" in rendered.html and rendered.tables.metrics == [{"metric": "m", "weight": "1"}]
    with db.read() as session:
        assert _stored_row(session) == (release_readme.RENDERER_VERSION, rendered.html)
        assert release_readme.release_readme(db, session, 1) == rendered  # read back, not rendered again
    db.dispose()


def _stored_row(session: Session) -> tuple[Any, ...]:
    return tuple(session.execute(select(Release.readme_renderer, Release.readme_html)).one())
