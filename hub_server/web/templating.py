"""Rendering pages: one Jinja2 environment (autoescaping on), display filters, and the headers every page sends."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

PACKAGE = Path(__file__).resolve().parent.parent
TEMPLATES = PACKAGE / "templates"
STATIC = PACKAGE / "static"

# Pages run no inline script and load nothing from elsewhere except README images over https.
SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'self'; img-src 'self' https: data:; style-src 'self'; "
                                "script-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
                                "frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


def ago(when: dt.datetime | None, now: dt.datetime | None = None) -> str:
    """``3 days ago``-style text for a UTC time."""
    if when is None:
        return ""
    seconds = max(0, int(((now or dt.datetime.now(dt.timezone.utc)) - when).total_seconds()))
    for unit, size in (("year", 31_536_000), ("month", 2_592_000), ("day", 86_400), ("hour", 3_600),
                       ("minute", 60)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'s' if count > 1 else ''} ago"
    return "just now"


def compact(number: int) -> str:
    """``1234`` → ``1.2k``: counts as a person reads them."""
    for suffix, size in (("M", 1_000_000), ("k", 1_000)):
        if number >= size:
            return f"{number / size:.1f}".rstrip("0").rstrip(".") + suffix
    return str(number)


def size(num_bytes: int) -> str:
    """A file size in B, KiB or MiB."""
    if num_bytes < 1024:
        return f"{num_bytes} B"
    if num_bytes < 1024 * 1024:
        return f"{num_bytes / 1024:.1f} KiB"
    return f"{num_bytes / 1024 / 1024:.1f} MiB"


@functools.lru_cache(maxsize=16)
def static_version(name: str) -> str:
    """A short content hash for a static file's URL, so browsers never keep a stale copy."""
    return hashlib.sha256((STATIC / name).read_bytes()).hexdigest()[:10]


@functools.lru_cache(maxsize=1)
def environment() -> Environment:
    """The Jinja2 environment of the Hub's pages."""
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(default=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(ago=ago, compact=compact, size=size)
    env.globals.update(static_version=static_version)
    return env


def page(request: Request, template: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    """Render ``template`` with the common context (mount prefix, signed-in user) as a response."""
    common = {"prefix": request.scope.get("root_path", ""), "user": getattr(request.state, "user_name", None),
              "query": "", "tag": ""}
    html = environment().get_template(template).render({**common, **context})
    headers = {**SECURITY_HEADERS, "Cache-Control": "private, no-cache"}
    return HTMLResponse(html, status_code=status, headers=headers)
