"""The Hub's /metrics: requests by route template (never by raw path), uploads, downloads, auth failures."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from hub_server import Settings, create_app
from hub_server.context import Hub
from hub_server.storage import LocalStorage
from hub_server.testing.dists import make_wheel
from tests.hub_server.conftest import bearer

JSON = "application/vnd.pypi.simple.v1+json"


def _samples(client: TestClient) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain; version=")
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(response.text) for s in family.samples}


def _value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_requests_are_counted_by_route_template_method_and_status(client: TestClient) -> None:
    for name in ("alpha", "beta", "gamma"):
        assert client.get(f"/simple/{name}/").status_code == 404
    client.get("/health")
    client.request("BREW", "/health")  # a made-up method is OTHER, not a series of its own
    client.get("/static/does-not-exist.css")
    samples = _samples(client)
    assert _value(samples, "vf_hub_requests_total", method="GET", route="/simple/{project}/", status="404") == 3
    assert _value(samples, "vf_hub_requests_total", method="GET", route="/health", status="200") == 1
    assert _value(samples, "vf_hub_requests_total", method="OTHER", route="/health", status="405") == 1
    assert _value(samples, "vf_hub_requests_total", method="GET", route="/static", status="404") == 1
    assert _value(samples, "vf_hub_request_duration_seconds_count", method="GET", route="/simple/{project}/") == 3


def test_no_client_can_grow_the_series_count(client: TestClient) -> None:
    def junk_requests(count: int) -> str:
        for _ in range(count):  # random paths, deep paths, odd methods
            junk = uuid.uuid4().hex
            client.get(f"/{junk}/{junk}/{junk}/{junk}/{junk}/{junk}")
            client.get(f"/simple/{junk}/")
            client.request(f"X{junk[:8].upper()}", "/health")
        return junk

    junk_requests(5)
    _samples(client)  # a scrape is a request too: its own series exists from the second scrape on
    series = set(_samples(client))
    junk = junk_requests(40)
    assert set(_samples(client)) == series  # the first few found every series there is to find
    assert junk not in client.get("/metrics").text
    samples = _samples(client)
    assert _value(samples, "vf_hub_requests_total", method="GET", route="unmatched", status="404") == 45


def test_uploads_downloads_and_auth_failures(hub: Hub, client: TestClient, make_user: Callable[[str], str],
                                             upload: Callable[..., httpx.Response], tmp_path: Path) -> None:
    token = make_user("alice")
    wheel = make_wheel(tmp_path, "demo-env", "0.1.0")
    assert upload(token, wheel, "demo-env", "0.1.0").status_code == 200
    assert upload(token, wheel, "demo-env", "0.1.0").status_code == 200  # identical: unchanged
    assert upload(None, wheel, "demo-env", "0.1.0").status_code == 401  # no credentials
    assert upload("vfh_not-a-real-token", wheel, "demo-env", "0.1.0").status_code == 403
    assert client.post("/legacy/", headers={"Authorization": "Digest nonsense"}).status_code == 403
    assert client.get("/simple/demo-env/", headers=bearer("vfh_stale")).status_code == 200  # reads as anonymous
    url = client.get("/simple/demo-env/", headers={"Accept": JSON}).json()["files"][0]["url"]
    for _ in range(3):  # the first through the route; once cached, the blob lane answers
        assert client.get(url).status_code == 200
    client.get(url, headers={"Range": "bytes=0-9"})  # a peek, not a download
    assert upload(token, wheel, "demo-env", "0.1.0").status_code == 200  # failures never lock a valid token out
    samples = _samples(client)
    assert _value(samples, "vf_hub_uploads_total", outcome="created") == 1
    assert _value(samples, "vf_hub_uploads_total", outcome="unchanged") == 2
    assert _value(samples, "vf_hub_uploads_total", outcome="refused") == 3
    assert _value(samples, "vf_hub_downloads_total") == 3
    assert _value(samples, "vf_hub_auth_failures_total", reason="missing") == 1
    assert _value(samples, "vf_hub_auth_failures_total", reason="invalid") == 1
    assert _value(samples, "vf_hub_auth_failures_total", reason="malformed") == 1
    assert _value(samples, "vf_hub_auth_failures_total", reason="read_as_anonymous") >= 1
    files = "/files/{sha256}/{filename}"
    assert _value(samples, "vf_hub_requests_total", method="GET", route=files, status="200") == 3
    if isinstance(hub.storage, LocalStorage):  # S3 blobs always go to the route
        assert _value(samples, "vf_hub_request_duration_seconds_count", method="GET", route=files) == 4
    assert _value(samples, "vf_hub_requests_total", method="POST", route="/legacy/", status="401") == 1


def test_metrics_can_be_turned_off(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "hub", metrics=False))
    try:
        with TestClient(app) as client:
            assert client.get("/metrics").status_code == 404
            assert client.get("/health").status_code == 200
    finally:
        app.state.hub.db.dispose()


def test_an_owner_cannot_be_named_metrics(hub: Hub) -> None:
    from hub_server.names import check_owner_name

    with pytest.raises(Exception, match="reserved"):
        check_owner_name("metrics")
