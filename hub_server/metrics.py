"""The Hub's Prometheus metrics: requests and latency by route, uploads, downloads, auth failures.

One :class:`HubMetrics` per app, on a registry of its own (no module globals: two apps in one process
count apart), served at ``GET /metrics`` on the Hub's own port (``Settings.metrics``). Every label value
comes from a fixed set: a route is its template (``/{owner}/{name}``), never the path asked for, a method
outside the standard ones is ``OTHER``, and a path no route matches is ``unmatched``, so no client can grow
the number of series. With several app workers (``vf-hub serve --workers N``) each worker writes its values
to ``PROMETHEUS_MULTIPROC_DIR``, which that command sets, and ``/metrics`` adds up every worker's.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.types import Scope

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "unmatched"
UploadOutcome = Literal["created", "unchanged", "repaired", "refused"]
AuthFailure = Literal["missing", "malformed", "invalid", "read_as_anonymous"]
"""No credentials where a write needs them; an Authorization header that is not a token; a token that is
unknown, expired or revoked; bad credentials on a read path, which then reads as anonymous."""
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class HubMetrics:
    """The instruments of one Hub app, on ``registry`` (a new one by default)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.requests = Counter("vf_hub_requests", "HTTP requests answered, by method, route template and status.",
                                ["method", "route", "status"], registry=self.registry)
        self.latency = Histogram("vf_hub_request_duration_seconds", "Seconds from a request's arrival to the end "
                                 "of its answer, by method and route template.", ["method", "route"],
                                 buckets=LATENCY_BUCKETS, registry=self.registry)
        self.uploads = Counter("vf_hub_uploads", "Distribution uploads (POST /legacy/), by outcome: created, "
                               "unchanged (identical file), repaired (a damaged stored copy replaced), refused.",
                               ["outcome"], registry=self.registry)
        self.downloads = Counter("vf_hub_downloads", "Complete downloads of distribution files (the figure the "
                                 "download counts add up).", registry=self.registry)
        self.auth_failures = Counter("vf_hub_auth_failures", "Failed authentications, by reason: missing, "
                                     "malformed, invalid, read_as_anonymous.", ["reason"], registry=self.registry)

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        """One request answered (``status`` 0: the client left before any answer)."""
        method = method if method in METHODS else "OTHER"
        self.requests.labels(method, route, str(status) if status else "none").inc()
        self.latency.labels(method, route).observe(seconds)

    def count_upload(self, outcome: UploadOutcome) -> None:
        self.uploads.labels(outcome).inc()

    def count_auth_failure(self, reason: AuthFailure) -> None:
        self.auth_failures.labels(reason).inc()

    def exposition(self) -> tuple[bytes, str]:
        """The body and content type of ``GET /metrics``: this worker's values, or every worker's."""
        directory = os.environ.get(MULTIPROC_ENV)
        if not directory:
            return generate_latest(self.registry), CONTENT_TYPE_LATEST
        merged = CollectorRegistry()
        MultiProcessCollector(merged, path=directory)
        return generate_latest(merged), CONTENT_TYPE_LATEST


def share_between_workers(directory: Path) -> None:
    """Make the app workers started after this (in child processes) count into ``directory`` together.

    The folder is emptied first: a restarted Hub starts its counters at 0 like a single process does. A
    ``PROMETHEUS_MULTIPROC_DIR`` already set (by a process manager) is kept as it is.
    """
    if os.environ.get(MULTIPROC_ENV):
        return
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    os.environ[MULTIPROC_ENV] = str(directory)


def route_label(scope: Scope, mounts: Iterable[str]) -> str:
    """The template of the route that answered ``scope`` (read after the app ran), a mount's prefix, or
    ``unmatched``."""
    route = scope.get("route")
    template = getattr(route, "path", None)
    if isinstance(template, str):
        return template
    path: str = scope.get("path", "")
    for prefix in mounts:
        if path == prefix or path.startswith(prefix + "/"):
            return prefix
    return UNMATCHED


__all__ = ["AuthFailure", "HubMetrics", "MULTIPROC_ENV", "UploadOutcome", "route_label", "share_between_workers"]
