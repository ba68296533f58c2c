"""A README as safe HTML: markdown rendered by markdown-it, then cleaned by an allow-list sanitiser (nh3).

Authors may write raw HTML in markdown (badges, ``<details>``), so the rendered HTML is never
trusted: nh3 (the ammonia sanitiser) keeps an allow-list of tags and attributes, drops
``<script>``/``<style>`` with their content, every ``on*`` handler and ``style`` attribute, and
any URL whose scheme is not http, https or mailto (``javascript:``, ``data:``, ...). Links get
``rel="nofollow noopener noreferrer"``. Other description types (reStructuredText, plain text)
are shown as escaped preformatted text.
"""

from __future__ import annotations

import functools
from html import escape

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

from hub_server.services.environments import is_markdown

_MAX_README_CHARS = 512 * 1024  # the upload form's field limit is 4 MiB; a page need not show more
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
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def sanitize(html: str) -> str:
    """Keep only allow-listed tags, attributes and URL schemes."""
    return nh3.clean(html, tags=_TAGS, attributes=_ATTRIBUTES, url_schemes=_SCHEMES,
                     link_rel="nofollow noopener noreferrer", strip_comments=True)


def render_readme(text: str, content_type: str) -> Markup:
    """The README as HTML that is safe to put in a page (at most its first 512 Ki characters)."""
    return _render(text[:_MAX_README_CHARS], content_type)


@functools.lru_cache(maxsize=64)  # keys are bounded by the cut above: at most 64 x 512 Ki characters
def _render(text: str, content_type: str) -> Markup:
    if not text.strip():
        return Markup("")
    if is_markdown(content_type):
        return Markup(sanitize(_markdown().render(text)))  # noqa: S704 - sanitised just now
    return Markup(f'<pre class="readme-plain">{escape(text)}</pre>')  # noqa: S704 - escaped
