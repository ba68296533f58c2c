"""nginx in front of a Hub, as docs/hub.md's scale path configures it, on 127.0.0.1 (tests and bench/hub_blobs.py).

The config is the documented one with a test's paths filled in: ``/`` is proxied to the Hub over
kept-alive connections, and ``ACCEL_PREFIX`` is an ``internal`` location onto the blob folder, so
only an ``X-Accel-Redirect`` from the Hub reaches it. ``extra`` adds server-level lines (the bench's
direct route onto the folder).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ACCEL_PREFIX = "/_blobs/"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def nginx_available() -> bool:
    """Whether an nginx binary is installed (``apt-get install nginx-light``)."""
    return Path(NGINX).is_file()


def nginx_config(work: Path, port: int, hub: str, blobs: Path, extra: str = "", read_timeout_s: int = 10) -> str:
    """One worker, sendfile, no access log; ``hub`` is the Hub's ``host:port``, ``blobs`` its blob folder;
    a client that sends its headers or body slower than ``read_timeout_s`` (between two reads) is dropped."""
    temp = work / "nginx-temp"
    user = "user root;\n" if os.geteuid() == 0 else ""  # workers must read a test's private temp folder
    temps = "".join(f"    {kind}_temp_path {temp}/{kind};\n" for kind in ("client_body", "proxy", "fastcgi",
                                                                         "uwsgi", "scgi"))
    return f"""{user}worker_processes 1;
daemon off;
pid {work / 'nginx.pid'};
error_log {work / 'nginx-error.log'} warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
{temps}    upstream hub {{ server {hub}; keepalive 64; }}
    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 110m;
        client_header_timeout {read_timeout_s}s;
        client_body_timeout {read_timeout_s}s;
        location / {{
            proxy_pass http://hub;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $remote_addr;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_request_buffering off;
        }}
        location {ACCEL_PREFIX} {{
            internal;
            alias {blobs}/;
            etag off;
            add_header ETag $upstream_http_etag;
        }}
{extra}    }}
}}
"""


@contextmanager
def running_nginx(work: Path, hub: str, blobs: Path, extra: str = "",
                  read_timeout_s: int = 10) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """nginx on a free port of 127.0.0.1 in front of ``hub``; yields its base URL and process; stops it."""
    (work / "nginx-temp").mkdir(parents=True, exist_ok=True)
    port = _free_port()
    config = work / "nginx.conf"
    config.write_text(nginx_config(work, port, hub, blobs, extra, read_timeout_s))
    log = work / "nginx.log"
    process = subprocess.Popen([NGINX, "-c", str(config), "-p", str(work)], stdout=log.open("wb"),
                               stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"nginx exited: {log.read_text()}{(work / 'nginx-error.log').read_text()}")
            try:
                httpx.get(f"{url}/health", timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError("nginx did not start") from None
                time.sleep(0.05)
        yield url, process
    finally:
        stop_process(process)


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """Terminate a server process and reap it; kill it if it is still there after 30 s."""
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
