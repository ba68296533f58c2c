"""The Hub's web UI: server-rendered pages (Jinja2) over the same catalogue the package index uses.

``mount(app)`` adds the static files and the pages; call it after every other router, so that
fixed paths (``/simple/``, ``/<owner>/simple/``, ...) win over ``/<owner>/<name>``.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from hub_server.web.routes import router
from hub_server.web.templating import STATIC


def mount(app: FastAPI) -> None:
    """Serve ``/static/`` and the pages from ``app`` (it must have ``app.state.downloads``)."""
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.include_router(router)


__all__ = ["mount", "router"]
