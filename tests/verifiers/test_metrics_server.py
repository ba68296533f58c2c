"""``serve_metrics``: a real HTTP endpoint on 127.0.0.1; a taken port or a bad config is refused in one line."""

from __future__ import annotations

import socket

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter
from pydantic import ValidationError

from verifiers.errors import UsageError
from verifiers.metrics_server import MetricsConfig, serve_configured, serve_metrics


def test_the_endpoint_serves_the_registrys_metrics_in_the_text_format() -> None:
    registry = CollectorRegistry()
    Counter("vf_test_things", "Things.", ["kind"], registry=registry).labels("a").inc(3)
    server = serve_metrics(0, registry=registry)
    try:
        response = httpx.get(server.url, timeout=5)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/plain; version=")
        assert 'vf_test_things_total{kind="a"} 3.0' in response.text
    finally:
        server.close()
    with pytest.raises(httpx.TransportError):
        httpx.get(server.url, timeout=2)


def test_a_taken_port_is_a_usage_error_that_names_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError, match=rf"cannot serve metrics on 127.0.0.1:{port}: .*choose another"):
            serve_metrics(port, registry=CollectorRegistry())


def test_an_address_that_cannot_be_bound_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="cannot serve metrics on 192.0.2.1"):
        serve_metrics(0, host="192.0.2.1", registry=CollectorRegistry())  # TEST-NET-1: no interface has it


def test_no_port_no_endpoint_and_bad_values_are_refused() -> None:
    assert serve_configured(MetricsConfig()) is None
    with pytest.raises(ValidationError, match="port"):
        MetricsConfig(port=65536)
    with pytest.raises(ValidationError, match="port"):
        MetricsConfig(port=-1)
    with pytest.raises(ValidationError, match="host"):
        MetricsConfig(host="")
    with pytest.raises(ValidationError, match="Extra inputs"):
        MetricsConfig.model_validate({"port": 1, "path": "/m"})
