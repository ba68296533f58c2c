"""A release's README, rendered once and kept with the release, so a page view never parses it.

A release's README (its core metadata's long description) never changes, so its safe HTML
(``services/readme_html.py``) and its argument and metric tables (``services/readme_tables.py``)
are computed when the release is created by an upload and stored on its row. A page reads them
back. A release stored before this existed (migration 0005), or by an older renderer
(:data:`RENDERER_VERSION`), is rendered on its first page view and stored then: every later
view reads the stored copy. Both the rendering and the extraction are bounded in input size and
CPU time, so even the first view of a hostile README costs at most about 1.5 s of CPU, once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from hub_server.db.database import Database
from hub_server.db.models import Release
from hub_server.services.readme_html import is_markdown, render_readme
from hub_server.services.readme_tables import ReadmeTables, readme_tables

# Raise when rendering changes (sanitiser allow-list, markdown options, table rules): stored READMEs
# of an older version are rendered again on their next view.
RENDERER_VERSION = 1


@dataclass(frozen=True)
class RenderedReadme:
    """What a page shows of a README: safe HTML, and the tables the environment details merge in."""

    html: str
    tables: ReadmeTables = field(default_factory=ReadmeTables)


def render(description: str, content_type: str) -> RenderedReadme:
    """Render a README now (bounded; see the module docstring). Tables are read from markdown only."""
    tables = readme_tables(description) if is_markdown(content_type) else ReadmeTables()
    return RenderedReadme(str(render_readme(description, content_type)), tables)


def columns(rendered: RenderedReadme) -> dict[str, Any]:
    """The ``releases`` columns that hold ``rendered``."""
    tables = {"arguments": rendered.tables.arguments, "metrics": rendered.tables.metrics}
    return {"readme_html": rendered.html, "readme_tables": json.dumps(tables), "readme_renderer": RENDERER_VERSION}


def _rows(value: Any) -> list[dict[str, str]] | None:
    if not isinstance(value, list) or not all(isinstance(row, dict) for row in value):
        return None
    return [{str(k): str(v) for k, v in row.items()} for row in value]


def _decode(html: str | None, tables: str | None, renderer: int | None) -> RenderedReadme | None:
    """The stored README, or ``None`` when there is none from this renderer (or it does not read back)."""
    if renderer != RENDERER_VERSION or html is None or tables is None:
        return None
    try:
        data = json.loads(tables)
    except json.JSONDecodeError:
        return None
    arguments = _rows(data.get("arguments")) if isinstance(data, dict) else None
    metrics = _rows(data.get("metrics")) if isinstance(data, dict) else None
    if arguments is None or metrics is None:
        return None
    return RenderedReadme(html, ReadmeTables(arguments, metrics))


def release_readme(db: Database, session: Session, release_id: int) -> RenderedReadme:
    """The stored README of a release; rendered and stored first if it has none yet (see the module docstring).

    ``session`` reads; the one-off store is its own short write transaction, which leaves the
    caller's reads (and the Hub's cached index pages, which no README changes) as they are.
    """
    stored = session.execute(select(Release.readme_html, Release.readme_tables, Release.readme_renderer)
                             .where(Release.id == release_id)).one()
    found = _decode(*stored)
    if found is not None:
        return found
    description, content_type = session.execute(
        select(Release.description, Release.description_content_type).where(Release.id == release_id)).one()
    rendered = render(description or "", content_type or "")
    with db.write(changes_reads=False) as writer:
        writer.execute(update(Release).where(Release.id == release_id).values(**columns(rendered)))
    return rendered


__all__ = ["RENDERER_VERSION", "RenderedReadme", "columns", "release_readme", "render"]
