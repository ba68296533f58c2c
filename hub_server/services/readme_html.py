"""A README as safe HTML: markdown (markdown-it) or reStructuredText (docutils), then an allow-list sanitiser.

Authors may write raw HTML in markdown (badges, ``<details>``), so the rendered HTML is never
trusted: nh3 (the ammonia sanitiser) keeps an allow-list of tags and attributes, drops
``<script>``/``<style>`` with their content, every ``on*`` handler and ``style`` attribute, and
any URL whose scheme is not http, https or mailto (``javascript:``, ``data:``, ...). Links get
``rel="nofollow noopener noreferrer"``.

reStructuredText (``text/x-rst``) goes through docutils with everything that reaches outside the
text turned off: no ``raw`` directive, no file or URL insertion (``include``, ``csv-table :file:``
or ``:url:``, which would read the server's files or fetch URLs), no configuration files, and no
error reports in the output; its HTML is then sanitised like markdown's. A README without a
``Description-Content-Type`` is reST too (the core-metadata default), but strictly: if docutils
finds an error in it, it was most likely plain text, and is shown as such. Other description types
(plain text, or reST where docutils is not installed) are shown as escaped preformatted text.

Cost is bounded: only the first :data:`MAX_README_CHARS` characters are rendered, and a markdown
parse that needs more than :data:`RENDER_BUDGET_S` of CPU (``services/markdown_budget.py``; a run
of ``[`` is the known worst case) gives up and the README is shown as escaped preformatted text.
The Hub renders a README once, when its release is uploaded (``services/release_readme.py``).
"""

from __future__ import annotations

import io
from html import escape
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

from hub_server.services.markdown_budget import OverBudget, budget_env, with_budget

MAX_README_CHARS = 512 * 1024  # the upload form's field limit is 4 MiB; a page need not show more
RENDER_BUDGET_S = 1.0  # CPU seconds for one markdown parse: ~20x what a 512 Ki-character README needs here
_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em", "h1", "h2",
    "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub",
    "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
}
_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "width", "height"},
    "td": {"align", "colspan", "rowspan"},
    "th": {"align", "colspan", "rowspan"},
    "ol": {"start"},
    "code": {"class"},  # language-xyz from fenced blocks
}
_SCHEMES = {"http", "https", "mailto"}


def _markdown() -> MarkdownIt:
    return with_budget(MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]))


_RST_SETTINGS: dict[str, Any] = {
    "raw_enabled": False,
    "file_insertion_enabled": False,
    "_disable_config": True,  # no docutils.conf from the working folder or the user's home
    "report_level": 5,  # no "System Message" blocks in the page
    "halt_level": 5,  # never raise on bad markup: render what parses
    "syntax_highlight": "none",
    "doctitle_xform": False,  # keep the first title in the body
    "input_encoding": "unicode",
}


def is_markdown(content_type: str) -> bool:
    """Whether a ``Description-Content-Type`` is markdown (the type ``vf-init`` packages declare)."""
    return content_type.split(";", 1)[0].strip().lower() == "text/markdown"


def is_rst(content_type: str) -> bool:
    """Whether a ``Description-Content-Type`` is reStructuredText."""
    return content_type.split(";", 1)[0].strip().lower() == "text/x-rst"


def _rst_html(text: str, strict: bool = False) -> str | None:
    """reStructuredText as (unsanitised) HTML; None when docutils is not installed, or, if ``strict``,
    when the text has an error as reST."""
    try:
        from docutils.core import publish_parts
        from docutils.utils import SystemMessage
        from docutils.writers.html5_polyglot import Writer
    except ImportError:
        return None
    settings = {**_RST_SETTINGS, "warning_stream": io.StringIO(), **({"halt_level": 3} if strict else {})}
    try:
        return str(publish_parts(text, writer=Writer(), settings_overrides=settings)["html_body"])
    except SystemMessage:  # only raised in strict mode
        return None


def sanitize(html: str) -> str:
    """Keep only allow-listed tags, attributes and URL schemes."""
    return nh3.clean(html, tags=_TAGS, attributes=_ATTRIBUTES, url_schemes=_SCHEMES,
                     link_rel="nofollow noopener noreferrer", strip_comments=True)


def _plain(text: str) -> Markup:
    return Markup(f'<pre class="readme-plain">{escape(text)}</pre>')  # noqa: S704 - escaped


def render_readme(text: str, content_type: str, budget_s: float = RENDER_BUDGET_S) -> Markup:
    """The README as HTML that is safe to put in a page (at most its first :data:`MAX_README_CHARS`
    characters; markdown that needs more than ``budget_s`` of CPU is shown as plain text)."""
    text = text[:MAX_README_CHARS]
    if not text.strip():
        return Markup("")
    if is_markdown(content_type):
        try:
            html = _markdown().render(text, budget_env(budget_s))
        except OverBudget:
            return _plain(text)
        return Markup(sanitize(html))  # noqa: S704 - sanitised just now
    html = _rst_html(text) if is_rst(content_type) else _rst_html(text, strict=True) if not content_type else None
    if html is not None:
        return Markup(sanitize(html))  # noqa: S704 - sanitised just now
    return _plain(text)
