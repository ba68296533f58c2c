"""``create_app(settings)``: one Hub app, its database migrated, nothing global.

Run it with any ASGI server (``vf-hub serve`` uses uvicorn); several workers may share one
database and one storage.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.requests import ClientDisconnect
from starlette.routing import Mount
from starlette.types import Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from hub_server import web
from hub_server.api import evals, files, legacy, rest, simple
from hub_server.api.blob_lane import LANE_ROUTE, BlobLane
from hub_server.api.download_tracking import CountDownloads
from hub_server.context import Hub, client_address
from hub_server.db.database import Database
from hub_server.errors import HubError, NotAuthenticated, RateLimited
from hub_server.metrics import HubMetrics, route_label
from hub_server.services.downloads import DownloadCounter
from hub_server.settings import Settings
from hub_server.storage import open_storage

log = logging.getLogger(__name__)


def _error_response(request: Request, error: HubError) -> Response:
    headers: dict[str, str] = {}
    if isinstance(error, NotAuthenticated):
        headers["WWW-Authenticate"] = 'Basic realm="vf-hub"'
    if isinstance(error, RateLimited):
        headers["Retry-After"] = str(error.retry_after)
    if request.url.path.startswith(f"{request.scope.get('root_path', '')}/api/"):
        return JSONResponse({"detail": error.message}, status_code=error.status, headers=headers)
    return PlainTextResponse(f"{error.message}\n", status_code=error.status, headers=headers)


class HubApp(FastAPI):
    """FastAPI with the Hub's blob lane in front of its whole stack (see ``hub_server.api.blob_lane``).

    Plain anonymous downloads of cached blobs, most of an index's traffic by bytes and a good share
    by requests, are answered before FastAPI's telemetry, middleware and routing; everything else
    (including any download the lane declines) goes through the app as usual. Every request, the
    lane's too, is counted and timed in ``metrics`` by its route's template.
    """

    def __init__(self, lane: BlobLane, metrics: HubMetrics, **options: Any) -> None:
        super().__init__(**options)
        self.blob_lane = lane
        self.metrics = metrics
        self.mount_prefixes: list[str] = []
        """Paths of mounted apps (``/static``): their requests are labelled by the prefix."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        started, status = time.perf_counter(), 0

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        route = None
        try:
            if await self.blob_lane.answer(scope, watch):
                route = LANE_ROUTE
            else:
                await super().__call__(scope, receive, watch)
        finally:
            # the router wrote the matched route into ``scope``
            self.metrics.observe_request(scope["method"], route or route_label(scope, self.mount_prefixes), status,
                                         time.perf_counter() - started)


def create_app(settings: Settings | None = None) -> HubApp:
    """A ready Hub app for ``settings`` (read from ``VF_HUB_*`` when omitted); migrates the database."""
    settings = settings or Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    db = Database(settings.resolved_database_url())
    db.migrate()
    storage = open_storage(settings.resolved_storage_url(), staging=settings.data_dir / "staging")
    hub = Hub(settings=settings, db=db, storage=storage, metrics=HubMetrics())
    downloads = DownloadCounter(db)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        flusher = asyncio.create_task(downloads.flush_periodically())
        yield
        flusher.cancel()
        downloads.flush()
        db.dispose()

    app = HubApp(
        BlobLane(hub, downloads),
        hub.metrics,
        title="Environments Hub",
        summary="A Python package index for verifiers environments.",
        redirect_slashes=False,  # twine refuses redirects; every path is registered as it is used
        docs_url="/api/docs",
        openapi_url="/api/openapi.json",
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.hub = hub
    app.state.downloads = downloads
    app.add_middleware(CountDownloads, counter=downloads, metrics=hub.metrics)  # the lane counts its own
    if settings.forwarded_allow_ips:  # only these peers may say who the client is (X-Forwarded-For/-Proto)
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.forwarded_allow_ips)

    async def on_hub_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HubError)
        return _error_response(request, error)

    async def on_disconnect(request: Request, _error: Exception) -> Response:
        # Nobody is left to answer, and nothing failed on our side: one line, not a traceback. The
        # upload's receiver has already removed its staging file.
        log.warning("client %s disconnected during %s %s; request dropped", client_address(request),
                    request.method, request.url.path)
        return Response(status_code=400)

    app.add_exception_handler(HubError, on_hub_error)
    app.add_exception_handler(ClientDisconnect, on_disconnect)

    @app.get("/health", include_in_schema=False)
    def health() -> dict[str, str]:
        return {"status": "ok"}

    if settings.metrics:

        @app.get("/metrics", include_in_schema=False)
        def metrics() -> Response:
            body, content_type = hub.metrics.exposition()
            return Response(body, media_type=content_type)

    # Fixed paths first: the per-owner routes ("/{owner}/...") would otherwise match them.
    app.include_router(rest.router)
    app.include_router(evals.router)
    app.include_router(files.router)
    app.include_router(legacy.router)
    app.include_router(simple.router)
    web.mount(app)  # last: its /{owner}/{name} pages must not shadow the fixed paths above
    app.mount_prefixes = [route.path for route in app.routes if isinstance(route, Mount)]
    return app
