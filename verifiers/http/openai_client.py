"""``AsyncOpenAI`` clients over :class:`~verifiers.http.transport.KeepAliveTransport`, as ``vf-eval`` builds them.

>>> client = make_openai_client("http://127.0.0.1:8000/v1", api_key="EMPTY", max_connections=512)  # doctest: +SKIP

Everything the OpenAI client does stays the same (requests, responses, streaming,
its retries and error classes); only the connection pool underneath is the fast one.
When the environment sets a proxy for ``base_url`` (or ``proxy`` is given), the
client uses httpx's own transport instead, which speaks to proxies, and logs that once.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Mapping

import httpx
from openai import AsyncOpenAI

from verifiers.http.transport import KeepAliveTransport, environment_proxy

logger = logging.getLogger("verifiers.http")

DEFAULT_TIMEOUT_S = 600.0


def make_openai_client(
    base_url: str,
    *,
    api_key: str | None = None,
    timeout: float | httpx.Timeout = DEFAULT_TIMEOUT_S,
    max_connections: int | None = None,
    headers: Mapping[str, str] | None = None,
    max_retries: int = 0,
    ssl_context: ssl.SSLContext | None = None,
    proxy: str | None = None,
    keepalive_expiry: float | None = 5.0,
) -> AsyncOpenAI:
    """An ``AsyncOpenAI`` client for ``base_url`` whose HTTP runs on :class:`KeepAliveTransport`.

    Args:
        base_url: the API root, e.g. ``http://127.0.0.1:8000/v1``.
        api_key: sent as the bearer token; ``None`` lets the OpenAI client read ``OPENAI_API_KEY``.
        timeout: seconds (or an ``httpx.Timeout``) for each request.
        max_connections: open connections at most; further requests queue. ``None``: no cap.
        headers: sent with every request.
        max_retries: the OpenAI client's own retries. 0 by default because a rollout retries
            transient failures itself, with backoff, and counts them.
        ssl_context: for ``https`` servers; default: httpx's (certifi's CAs, ``SSL_CERT_FILE``).
        proxy: an explicit proxy URL; with one, httpx's transport is used.
        keepalive_expiry: seconds an idle connection is kept for reuse (``None``: until the server closes it).
            5 s matches what most servers allow; a client that pauses longer between bursts on a server that
            keeps connections longer (an RL orchestrator waiting for its trainer) saves reconnecting them all.
    """
    if max_connections is not None and max_connections < 1:
        raise ValueError(f"max_connections must be >= 1 or None, got {max_connections}")
    http_timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
    proxy = proxy or environment_proxy(httpx.URL(base_url))
    if proxy:
        logger.info("a proxy is configured for %s: using httpx's default transport (slower at high concurrency)",
                    base_url)
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections,
                              keepalive_expiry=keepalive_expiry)
        http = httpx.AsyncClient(proxy=proxy, limits=limits, timeout=http_timeout,
                                 verify=ssl_context if ssl_context is not None else True)
    else:
        transport = KeepAliveTransport(max_connections=max_connections, keepalive_expiry=keepalive_expiry,
                                       ssl_context=ssl_context, trust_env=False)
        http = httpx.AsyncClient(transport=transport, timeout=http_timeout, trust_env=False)
    # openai takes httpx's clients and timeouts as well as httpx2's (it checks for both at run time), but its
    # annotations name only httpx2's: the two ignores below are for that
    return AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=max_retries, default_headers=dict(headers or {}),
                       timeout=http_timeout,  # type: ignore[arg-type]
                       http_client=http)  # type: ignore[arg-type]


__all__ = ["DEFAULT_TIMEOUT_S", "make_openai_client"]
