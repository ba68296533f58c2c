"""PEP 691 content negotiation for the simple API: which of HTML and JSON the client prefers.

No ``Accept`` header, or ``*/*``, gets HTML (what every client understands). ``latest`` aliases
are accepted; the response always names the concrete version. Nothing acceptable: 406.
"""

from __future__ import annotations

from hub_server.errors import NotAcceptable

JSON_V1 = "application/vnd.pypi.simple.v1+json"
HTML_V1 = "application/vnd.pypi.simple.v1+html"
TEXT_HTML = "text/html"
OFFERED = (JSON_V1, HTML_V1, TEXT_HTML)

_ALIASES = {
    JSON_V1: JSON_V1,
    "application/vnd.pypi.simple.latest+json": JSON_V1,
    HTML_V1: HTML_V1,
    "application/vnd.pypi.simple.latest+html": HTML_V1,
    TEXT_HTML: TEXT_HTML,
    "text/*": TEXT_HTML,
    "*/*": TEXT_HTML,
}


def _q(params: list[str]) -> float:
    for param in params:
        key, _, value = param.strip().partition("=")
        if key.strip().lower() == "q":
            try:
                return max(0.0, min(1.0, float(value)))
            except ValueError:
                return 0.0
    return 1.0


def choose_media_type(accept: str | None) -> str:
    """The media type to answer with for this ``Accept`` header (highest q; ties: the earliest listed)."""
    if not accept or not accept.strip():
        return TEXT_HTML
    ranked: list[tuple[float, int, str]] = []
    for order, entry in enumerate(accept.split(",")):
        kind, *params = entry.split(";")
        offer = _ALIASES.get(kind.strip().lower())
        quality = _q(params)
        if offer is not None and quality > 0:
            ranked.append((-quality, order, offer))
    if not ranked:
        raise NotAcceptable(f"no acceptable media type; this index serves {', '.join(OFFERED)}")
    return min(ranked)[2]
