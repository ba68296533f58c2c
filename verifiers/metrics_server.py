"""A process's Prometheus endpoint: ``GET /metrics`` on the port its config names.

Every long-running process of the project that keeps metrics (the orchestrator, the trainer's rank 0)
has a ``metrics`` table in its config (:class:`MetricsConfig`): off unless a port is given, since two
processes on one machine must not both take a default port. The endpoint serves a registry, by default
the process's own (``prometheus_client.REGISTRY``), so the metrics of every part running in the process
appear on it: the sandboxes' beside the orchestrator's when an environment uses sandboxes. The Hub
serves ``/metrics`` on its own app instead (``hub_server.metrics``). docs/observability.md names the
metrics.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from verifiers.errors import UsageError
from verifiers.optional import import_optional

INSTALL_HINT = "pip install 'verifiers[metrics]'"


class MetricsConfig(BaseModel):
    """Where a process serves its Prometheus metrics (off by default)."""

    model_config = ConfigDict(extra="forbid")

    port: int | None = Field(
        None, ge=0, le=65535, description="Serve Prometheus metrics at http://HOST:PORT/metrics (0: any free port); "
        "unset: no endpoint. Give each process on a machine its own port.",
    )
    host: str = Field(
        "127.0.0.1", min_length=1, description="Address the metrics endpoint listens on (0.0.0.0 lets a Prometheus "
        "on another machine scrape it).",
    )


@dataclass
class MetricsServer:
    """A running endpoint: the port it listens on, and a way to stop it."""

    host: str
    port: int
    _server: Any
    _thread: threading.Thread

    @property
    def url(self) -> str:
        """The endpoint's URL."""
        return f"http://{self.host}:{self.port}/metrics"

    def close(self) -> None:
        """Stop listening (the process's metrics keep recording)."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def serve_metrics(port: int, host: str = "127.0.0.1", registry: Any = None) -> MetricsServer:
    """Serve ``registry`` (default: the process's) at ``http://host:port/metrics`` from a daemon thread.

    Raises:
        UsageError: the port is taken or the address cannot be bound, said in one line.
        MissingDependencyError: ``prometheus-client`` is not installed (the ``metrics`` extra).
    """
    prometheus = import_optional("prometheus_client", "Prometheus metrics", INSTALL_HINT)
    try:
        server, thread = prometheus.start_http_server(port, addr=host, registry=registry or prometheus.REGISTRY)
    except OSError as error:
        raise UsageError(f"cannot serve metrics on {host}:{port}: {error.strerror or error}; choose another "
                         "metrics port (0 picks a free one)") from None
    return MetricsServer(host, int(server.server_address[1]), server, thread)


def serve_configured(config: MetricsConfig, registry: Any = None) -> MetricsServer | None:
    """:func:`serve_metrics` for ``config``, or None when it names no port."""
    if config.port is None:
        return None
    return serve_metrics(config.port, config.host, registry)


__all__ = ["MetricsConfig", "MetricsServer", "serve_configured", "serve_metrics"]
