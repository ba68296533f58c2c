"""HTTP for the SDK: the HTTP/1.1 wire format, and the model client ``vf-eval`` uses.

* :mod:`verifiers.http.http11` — the wire format (the scripted server and the sandbox executor serve with it).
* :class:`AioHttpClient` — openai's aiohttp client, its errors raised as httpx's transport raises them.
* :func:`make_openai_client` — an ``AsyncOpenAI`` client on it::

    client = make_openai_client("http://127.0.0.1:8000/v1", api_key="EMPTY", max_connections=1024)
"""

from verifiers.http.aiohttp_client import AioHttpClient
from verifiers.http.openai_client import make_openai_client

__all__ = ["AioHttpClient", "make_openai_client"]
