"""``AsyncOpenAI`` clients on openai's own aiohttp client, as ``vf-eval`` builds them.

>>> client = make_openai_client("http://127.0.0.1:8000/v1", api_key="EMPTY", max_connections=512)  # doctest: +SKIP

Everything the OpenAI client does stays the same (requests, responses, streaming, its retries and
error classes); underneath, openai's aiohttp client (its error mapping corrected, see
:mod:`verifiers.http.aiohttp_client`) sends the requests over aiohttp's connection pool, which keeps
up with thousands of rollouts in flight where httpx's pool does not (docs/benchmarks.md). Proxies set
in the environment (``HTTP_PROXY``, ``NO_PROXY``...) and ``SSL_CERT_FILE`` apply, as they do for
openai's default client.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping

import httpx2
from openai import AsyncOpenAI

from verifiers.http.aiohttp_client import AioHttpClient

DEFAULT_TIMEOUT_S = 600.0
DEFAULT_MAX_RESPONSE_BYTES = 32 * 2**20


def make_openai_client(
    base_url: str,
    *,
    api_key: str | None = None,
    timeout: float | httpx2.Timeout = DEFAULT_TIMEOUT_S,
    max_connections: int | None = None,
    headers: Mapping[str, str] | None = None,
    max_retries: int = 0,
    ssl_context: ssl.SSLContext | None = None,
    proxy: str | None = None,
    keepalive_expiry: float | None = 5.0,
    max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
) -> AsyncOpenAI:
    """An ``AsyncOpenAI`` client for ``base_url`` whose HTTP runs on aiohttp (:class:`AioHttpClient`).

    Args:
        base_url: the API root, e.g. ``http://127.0.0.1:8000/v1``.
        api_key: sent as the bearer token; ``None`` lets the OpenAI client read ``OPENAI_API_KEY``.
        timeout: seconds (or an ``httpx2.Timeout``) for each request.
        max_connections: open connections at most; further requests queue. ``None``: no cap.
        headers: sent with every request.
        max_retries: the OpenAI client's own retries. 0 by default because a rollout retries
            transient failures itself, with backoff, and counts them.
        ssl_context: for ``https`` servers; default: certifi's CAs, or ``SSL_CERT_FILE``'s.
        proxy: a proxy URL for every request; default: the environment's proxy for ``base_url``, if any.
        keepalive_expiry: seconds an idle connection is kept for reuse (``None``: until the server closes it).
            5 s matches what most servers allow; a client that pauses longer between bursts on a server that
            keeps connections longer (an RL orchestrator waiting for its trainer) saves reconnecting them all.
        max_response_bytes: the largest reply body read (``None``: no limit); a larger one fails the request
            with :class:`~verifiers.errors.ReplyTooLargeError`, which a rollout does not retry. 32 MiB by
            default: a 32k-token reply with 20 logprobs a token is a few MB.
    """
    if max_connections is not None and max_connections < 1:
        raise ValueError(f"max_connections must be >= 1 or None, got {max_connections}")
    if max_response_bytes is not None and max_response_bytes < 1:
        raise ValueError(f"max_response_bytes must be >= 1 or None, got {max_response_bytes}")
    http_timeout = timeout if isinstance(timeout, httpx2.Timeout) else httpx2.Timeout(timeout)
    # aiohttp's connector reads a limit of 0 as "no cap" (left out, it would cap at 100)
    limits = httpx2.Limits(max_connections=max_connections or 0, max_keepalive_connections=max_connections,
                           keepalive_expiry=keepalive_expiry)
    http = AioHttpClient(limits=limits, timeout=http_timeout, proxy=proxy, max_response_bytes=max_response_bytes,
                         verify=ssl_context if ssl_context is not None else True)
    return AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=max_retries,
                       default_headers=dict(headers or {}), timeout=http_timeout, http_client=http)


__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "DEFAULT_TIMEOUT_S", "make_openai_client"]
