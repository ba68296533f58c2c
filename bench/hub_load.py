"""A small HTTP/1.1 load generator: N keep-alive connections sending one GET each, back to back.

Run as its own process (``bench/hub.py`` starts it), so the load never shares an interpreter with
the server under test. It speaks just enough HTTP for index pages and file downloads (status
line, headers, ``Content-Length`` or chunked bodies) over raw asyncio streams: a full client
library would spend more CPU per request than the servers being measured. Prints one JSON line::

    python bench/hub_load.py http://127.0.0.1:8000/simple/demo/ --accept text/html --seconds 5
    {"requests": 10231, "errors": 0, "rps": 2046.2, "p50_ms": 15.1, "p99_ms": 31.0, "cpu_s": 4.1, ...}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit


@dataclass
class Tally:
    """What the connections saw while the clock ran."""

    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    body_bytes: int = 0
    statuses: dict[int, int] = field(default_factory=dict)


async def _read_body(reader: asyncio.StreamReader, head: bytes) -> bytes:
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    if b"content-length" in headers:
        return await reader.readexactly(int(headers[b"content-length"]))
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        parts: list[bytes] = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                return b"".join(parts)
            parts.append(chunk[:-2])
    raise ValueError("response without Content-Length or chunked encoding")


async def _connection(host: str, port: int, request: bytes, until: float, measure_from: float, tally: Tally) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while (start := time.perf_counter()) < until:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            body = await _read_body(reader, head)
            if start < measure_from:
                continue  # warm-up
            status = int(head[9:12])
            tally.statuses[status] = tally.statuses.get(status, 0) + 1
            if status != 200:
                tally.errors += 1
            tally.latencies.append(time.perf_counter() - start)
            tally.body_bytes += len(body)
    finally:
        writer.close()


async def run(url: str, accept: str, connections: int, seconds: float, warmup: float) -> dict[str, object]:
    """Load ``url`` for ``warmup + seconds``; figures cover the last ``seconds`` only."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    request = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: {accept}\r\n"
               "User-Agent: vf-hub-bench\r\nConnection: keep-alive\r\n\r\n").encode()
    tally = Tally()
    begin = time.perf_counter()
    measure_from = begin + warmup
    until = measure_from + seconds
    cpu_before = _cpu_seconds()
    await asyncio.gather(*(_connection(host, port, request, until, measure_from, tally) for _ in range(connections)))
    ordered = sorted(tally.latencies)
    count = len(ordered)
    return {
        "requests": count,
        "errors": tally.errors,
        "statuses": tally.statuses,
        "rps": round(count / seconds, 1),
        "p50_ms": round(statistics.median(ordered) * 1000, 2) if ordered else None,
        "p99_ms": round(ordered[min(count - 1, int(count * 0.99))] * 1000, 2) if ordered else None,
        "mib_per_s": round(tally.body_bytes / seconds / 2**20, 2),
        "cpu_s": round(_cpu_seconds() - cpu_before, 2),  # the generator's own, to show it was not the limit
    }


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="The URL every request GETs.")
    parser.add_argument("--accept", default="*/*", help="The Accept header to send.")
    parser.add_argument("--connections", type=int, default=32,
                        help="Keep-alive connections, each with one request in flight at a time.")
    parser.add_argument("--seconds", type=float, default=5.0, help="How long to measure.")
    parser.add_argument("--warmup", type=float, default=1.0, help="Seconds of load before measuring starts.")
    args = parser.parse_args(argv)
    if args.connections < 1 or args.seconds <= 0 or args.warmup < 0:
        parser.error("--connections must be >= 1, --seconds > 0 and --warmup >= 0")
    result = asyncio.run(run(args.url, args.accept, args.connections, args.seconds, args.warmup))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
