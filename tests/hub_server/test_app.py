"""The app's own handling of requests that go wrong below the routes: a client gone mid-upload."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

from hub_server.context import Hub
from hub_server.testing.dists import make_wheel, upload_form
from tests.hub_server.conftest import basic


async def test_a_client_disconnecting_mid_upload_is_one_log_line_and_leaves_no_staging_file(
        app: FastAPI, hub: Hub, make_user: Callable[..., str], tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    token = make_user("alice")
    wheel = make_wheel(tmp_path, "demo-env", "0.1.0", body="X = '" + "a" * 100_000 + "'\n")
    head = "".join(f'--XyZ\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'
                   for key, value in upload_form(wheel, "demo-env", "0.1.0").items())
    head += f'--XyZ\r\nContent-Disposition: form-data; name="content"; filename="{wheel.name}"\r\n\r\n'
    first = head.encode() + wheel.read_bytes()[:1000]
    messages = [{"type": "http.request", "body": first, "more_body": True}, {"type": "http.disconnect"}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        return None

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": "/legacy/", "raw_path": b"/legacy/", "query_string": b"", "root_path": "",
        "headers": [(b"host", b"hub"), (b"authorization", basic(token)["Authorization"].encode()),
                    (b"content-type", b"multipart/form-data; boundary=XyZ"),
                    (b"content-length", str(len(first) + 10_000_000).encode())],
        "client": ("192.0.2.7", 5000), "server": ("hub", 80),
    }
    with caplog.at_level(logging.INFO):
        await app(scope, receive, send)  # before: ClientDisconnect escaped the app, logged with its traceback
    dropped = [r for r in caplog.records if "disconnected" in r.getMessage()]
    assert [r.getMessage() for r in dropped] == ["client 192.0.2.7 disconnected during POST /legacy/; request dropped"]
    assert all(r.exc_info is None for r in caplog.records)
    assert list(hub.storage.staging_dir().iterdir()) == []
