"""HTTP for the SDK: the HTTP/1.1 wire format, and a fast keep-alive client transport for model APIs.

* :mod:`verifiers.http.http11` — the wire format (the scripted server and the sandbox executor serve with it).
* :class:`KeepAliveTransport` — an ``httpx`` transport with O(1) connection pools per origin.
* :func:`make_openai_client` — an ``AsyncOpenAI`` client over it (what ``vf-eval`` uses)::

    client = make_openai_client("http://127.0.0.1:8000/v1", api_key="EMPTY", max_connections=1024)
"""

from verifiers.http.openai_client import make_openai_client
from verifiers.http.transport import KeepAliveTransport, ProxyNotSupported, environment_proxy

__all__ = ["KeepAliveTransport", "ProxyNotSupported", "environment_proxy", "make_openai_client"]
