"""A relay: nginx serving a folder over HTTP, taking WebDAV PUT/DELETE from the publisher, rate-limited per client.

Every request needs the run secret as its bearer token (``VF_RUN_SECRET``): writes always, reads unless
``public_reads`` (shards are the run's weights). nginx compares it in a ``map``; the config file that holds it is
readable by its owner only.

nginx is Debian's (``scripts/setup_nginx.sh``; its http_dav module is built in). Each relay gets its own prefix
folder for config, logs, pid and request-body temp files, so several run side by side without root::

    relay = NginxRelay(RelayConfig(port=8101, rate_limit_bytes=50 * 2**20), workdir=Path("/srv/relay1"))
    relay.start()        # serves http://127.0.0.1:8101/
    ...
    relay.stop()

Or from the command line, in the foreground until SIGTERM or Ctrl-C (which stop nginx)::

    python -m trainer_adapter.broadcast.relay --port 8101 --dir /srv/relay1 [--rate-limit-bytes 52428800]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import NoReturn

from pydantic import BaseModel, Field, ValidationError

from trainer_adapter.broadcast.errors import RelayError
from trainer_adapter.inference.run_secret import RUN_SECRET_VAR, run_secret
from trainer_adapter.lifeline import parent_death_signal, stop_process

NGINX_SETUP = "bash scripts/setup_nginx.sh"


class RelayConfig(BaseModel):
    """One relay server's settings."""

    host: str = Field("127.0.0.1", description="address to listen on")
    port: int = Field(ge=1, le=65535, description="port to listen on")
    rate_limit_bytes: int = Field(0, ge=0, description="per-connection send rate, bytes/s (limit_rate); 0 = none")
    max_conns_per_client: int = Field(16, ge=1, description="concurrent connections per client address (limit_conn)")
    max_upload_bytes: int = Field(2**30, ge=1, description="largest shard or manifest a PUT may carry")
    public_reads: bool = Field(False, description="serve GET and HEAD without the run secret (writes always need it)")


def nginx_binary() -> str | None:
    """The nginx executable on PATH or in Debian's place, or None."""
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


_SECRET_CHARS = re.compile(r"[A-Za-z0-9._~+/=-]{16,512}")


def _auth_map(secret: str, public_reads: bool) -> str:
    """``$relay_denied``: 0 for a request with the secret (any method), or a read when reads are public."""
    if not _SECRET_CHARS.fullmatch(secret):
        raise RelayError(f"the run secret ({RUN_SECRET_VAR}) must be 16-512 characters of A-Z a-z 0-9 . _ ~ + / = -")
    entries = "".join(f'        "{method} Bearer {secret}" 0;\n' for method in ("GET", "HEAD", "PUT", "DELETE"))
    public = '        "~^(GET|HEAD) " 0;\n' if public_reads else ""
    # keys are the method and the whole header (~560 bytes at most): nginx's default 64-byte buckets cannot hold them
    return f"""    map_hash_bucket_size 1024;
    map "$request_method $http_authorization" $relay_denied {{
        default 1;
{entries}{public}    }}
"""


def nginx_conf(config: RelayConfig, workdir: Path, secret: str) -> str:
    """The relay's whole nginx.conf: one server, the data folder ``workdir/data`` as its root, ``secret`` needed."""
    # As root nginx's workers would switch to "nobody", who cannot write the data folder it was given.
    user = "user root root;\n" if os.geteuid() == 0 else ""
    return f"""{user}worker_processes 1;
daemon off;
pid {workdir}/nginx.pid;
error_log {workdir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {workdir}/body_tmp;
    proxy_temp_path {workdir}/proxy_tmp;
    fastcgi_temp_path {workdir}/fastcgi_tmp;
    uwsgi_temp_path {workdir}/uwsgi_tmp;
    scgi_temp_path {workdir}/scgi_tmp;
    types {{ application/json json; }}
    default_type application/octet-stream;
    sendfile on;
    limit_conn_zone $binary_remote_addr zone=per_client:1m;
{_auth_map(secret, config.public_reads)}    server {{
        listen {config.host}:{config.port};
        root {workdir}/data;
        if ($relay_denied) {{ return 401; }}
        client_max_body_size {config.max_upload_bytes};
        dav_methods PUT DELETE;
        create_full_put_path on;
        dav_access user:rw group:r all:r;
        limit_conn per_client {config.max_conns_per_client};
        limit_rate {config.rate_limit_bytes};
        # The publisher lists versions to delete all but the newest; readers only GET files.
        autoindex on;
        autoindex_format json;
    }}
}}
"""


class NginxRelay:
    """One nginx process serving a relay on ``config.host:config.port``."""

    def __init__(self, config: RelayConfig, workdir: Path, binary: str | None = None,
                 secret: str | None = None) -> None:
        self.config = config
        self.workdir = workdir
        self.binary = binary or nginx_binary()
        self.secret = secret  # default: the run secret of the environment when it starts
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.config.port}/"

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    def start(self, timeout: float = 10.0) -> None:
        """Write the config and start nginx; returns once it accepts connections."""
        if self.binary is None:
            raise RelayError(f"nginx is not installed; install it with {NGINX_SETUP}")
        secret = self.secret if self.secret is not None else run_secret()
        if not secret:
            raise RelayError(f"a relay needs the run secret ({RUN_SECRET_VAR}): it takes writes only with it")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "body_tmp").mkdir(exist_ok=True)
        conf = self.workdir / "nginx.conf"
        conf.unlink(missing_ok=True)
        conf.touch(mode=0o600)  # it holds the secret
        conf.write_text(nginx_conf(self.config, self.workdir, secret))
        self._pid_file.unlink(missing_ok=True)
        log = (self.workdir / "stderr.log").open("ab")
        # A relay goes down with the process that started it (a test or bench killed midway leaves none behind).
        # Its own session: stop() and kill() reach the master and its worker as one group.
        command = [self.binary, "-p", str(self.workdir), "-c", str(conf)]
        self.process = subprocess.Popen(command, stdout=log, stderr=log, preexec_fn=parent_death_signal(),
                                        start_new_session=True)  # fmt: skip
        log.close()
        deadline = time.monotonic() + timeout
        while not self._listening():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                errors = (self.workdir / "stderr.log").read_text(errors="replace")[-2000:]
                raise RelayError(f"nginx did not start on {self.config.host}:{self.config.port}: {errors}")
            time.sleep(0.05)

    @property
    def _pid_file(self) -> Path:
        return self.workdir / "nginx.pid"

    def _listening(self) -> bool:
        """Whether this nginx bound its port: it writes its pid file only after that (a port probe alone could
        reach another server on a taken port)."""
        assert self.process is not None
        try:
            written = self._pid_file.read_text().strip()
        except OSError:
            return False
        return written == str(self.process.pid) and self._accepts()

    def _accepts(self) -> bool:
        try:
            with socket.create_connection((self.config.host, self.config.port), timeout=0.5):
                return True
        except OSError:
            return False

    def kill(self) -> None:
        """Stop at once, mid-transfer (SIGKILL the master, SIGKILL its worker): what a crashed node looks like."""
        if self.process is not None:
            stop_process(self.process, grace=0, first=signal.SIGKILL, group=True)
            self.process = None

    def stop(self) -> None:
        """Stop nginx (fast shutdown, SIGKILL after 10 s) and wait for it."""
        if self.process is not None:
            stop_process(self.process, grace=10, group=True)
            self.process = None


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one ``error:`` line and exit 2 (its default prints the usage too)."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="python -m trainer_adapter.broadcast.relay",
                            description="Serve one relay (nginx) in the foreground until SIGTERM or Ctrl-C.")
    parser.add_argument("--port", type=int, required=True, help="port to listen on")
    parser.add_argument("--dir", type=Path, required=True,
                        help="the relay's own folder: nginx.conf, logs, and the versions under DIR/data")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--public-reads", action="store_true",
                        help=RelayConfig.model_fields["public_reads"].description)
    for name, field in RelayConfig.model_fields.items():
        if name not in ("host", "port", "public_reads"):
            parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=field.default,
                                help=f"{field.description} (default {field.default})")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m trainer_adapter.broadcast.relay``: 0 when stopped by a signal, 1 when nginx fails, 2 on bad input."""
    args = _parser().parse_args(argv)
    try:
        config = RelayConfig(**{k: v for k, v in vars(args).items() if k != "dir"})
    except ValidationError as exc:
        problems = "; ".join(f"--{'.'.join(map(str, e['loc'])).replace('_', '-')}: {e['msg']}" for e in exc.errors())
        print(f"error: {problems}", file=sys.stderr)
        return 2
    if args.dir.exists() and not args.dir.is_dir():
        print(f"error: --dir {args.dir} is not a folder", file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    relay = NginxRelay(config, args.dir.resolve())
    try:
        relay.start()
    except RelayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"relay at {relay.url} serving {relay.data_dir}", flush=True)
    try:
        while not stop.wait(0.5):
            if relay.process is not None and relay.process.poll() is not None:
                print(f"error: nginx exited with status {relay.process.returncode}; see {args.dir}/error.log",
                      file=sys.stderr)
                return 1
    finally:
        relay.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["NGINX_SETUP", "NginxRelay", "RelayConfig", "main", "nginx_binary", "nginx_conf"]
