"""Simple repository pages in both formats: PEP 503 HTML and PEP 691 JSON (PEP 592, 658/714, 700).

File URLs are root-relative (``/files/<sha256>/<filename>``), which both pip and uv resolve
against the page URL; ``prefix`` carries a mount path when the Hub sits behind one.
"""

from __future__ import annotations

import json
from html import escape

from hub_server.services.catalog import FileView, ProjectView

API_VERSION = "1.1"  # PEP 700; no PEP 740 provenance or PEP 792 status yet


def file_url(prefix: str, sha256: str, filename: str) -> str:
    """The content-addressed URL path of a file."""
    return f"{prefix}/files/{sha256}/{filename}"


def _yanked(file: FileView) -> str | bool:
    if not file.yanked:
        return False
    return file.yanked_reason or True


def project_json(view: ProjectView, prefix: str) -> bytes:
    """The PEP 691 project page."""
    files = []
    for file in view.files:
        entry: dict[str, object] = {
            "filename": file.filename,
            "url": file_url(prefix, file.sha256, file.filename),
            "hashes": {"sha256": file.sha256},
            "size": file.size,
            "upload-time": file.uploaded_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "yanked": _yanked(file),
        }
        if file.requires_python:
            entry["requires-python"] = file.requires_python
        metadata = {"sha256": file.metadata_sha256} if file.metadata_sha256 else False
        entry["core-metadata"] = metadata
        entry["data-dist-info-metadata"] = metadata  # the PEP 658 name, for older clients
        files.append(entry)
    page = {"meta": {"api-version": API_VERSION}, "name": view.normalized, "versions": view.versions, "files": files}
    return json.dumps(page, separators=(",", ":")).encode()


def project_html(view: ProjectView, prefix: str) -> bytes:
    """The PEP 503 project page."""
    links = []
    for file in view.files:
        attrs = [f'href="{escape(file_url(prefix, file.sha256, file.filename))}#sha256={file.sha256}"']
        if file.requires_python:
            attrs.append(f'data-requires-python="{escape(file.requires_python)}"')
        if file.yanked:
            attrs.append(f'data-yanked="{escape(file.yanked_reason)}"')
        if file.metadata_sha256:
            attrs.append(f'data-core-metadata="sha256={file.metadata_sha256}"')
            attrs.append(f'data-dist-info-metadata="sha256={file.metadata_sha256}"')
        links.append(f"    <a {' '.join(attrs)}>{escape(file.filename)}</a><br/>")
    return _html(f"Links for {view.normalized}", links)


def index_json(projects: list[tuple[str, str]]) -> bytes:
    """The PEP 691 root page: every visible project."""
    page = {"meta": {"api-version": API_VERSION}, "projects": [{"name": name} for name, _ in projects]}
    return json.dumps(page, separators=(",", ":")).encode()


def index_html(projects: list[tuple[str, str]]) -> bytes:
    """The PEP 503 root page: one link per visible project, to its normalised page."""
    links = [f'    <a href="{escape(normal)}/">{escape(name)}</a><br/>' for name, normal in projects]
    return _html("Simple index", links)


def _html(title: str, body: list[str]) -> bytes:
    lines = [
        "<!DOCTYPE html>",
        "<html>",
        "  <head>",
        f'    <meta name="pypi:repository-version" content="{API_VERSION}">',
        f"    <title>{escape(title)}</title>",
        "  </head>",
        "  <body>",
        f"    <h1>{escape(title)}</h1>",
        *body,
        "  </body>",
        "</html>",
        "",
    ]
    return "\n".join(lines).encode()
