"""README rendering: markdown becomes HTML, and nothing that runs script survives the sanitiser."""

from __future__ import annotations

import pytest

from hub_server.web.readme import render_readme, sanitize


@pytest.mark.parametrize(
    "markdown, forbidden",
    [
        ("<script>alert('x')</script>\n\nafter", ["<script", "alert("]),
        ('<img src="https://e.org/a.png" onerror="alert(1)">', ["onerror", "alert("]),
        ('<a href="javascript:alert(1)">x</a>', ["javascript:"]),
        ('<a href="JaVaScRiPt:alert(1)">x</a>', ["avascript:", "alert("]),
        ('<a href="&#106;avascript:alert(1)">x</a>', ["avascript", "alert("]),
        ("[click](javascript:alert(1))", ['href="javascript']),
        ('<img src="data:text/html;base64,PHNjcmlwdD4=">', ["data:"]),
        ('<div style="background:url(x)" onclick="steal()">d</div>', ["style=", "onclick", "steal"]),
        ('<iframe src="https://e.org"></iframe><object data="x"></object><embed src="y">',
         ["<iframe", "<object", "<embed"]),
        ('<form action="https://e.org"><input name="t"></form>', ["<form", "<input"]),
        ("<svg><script>alert(1)</script></svg>", ["<svg", "<script", "alert("]),
        ("<style>body{display:none}</style>\n\nafter", ["<style", "display:none"]),
        ('<meta http-equiv="refresh" content="0;url=https://e.org">', ["<meta", "refresh"]),
    ],
)
def test_script_and_its_disguises_are_removed(markdown: str, forbidden: list[str]) -> None:
    html = str(render_readme(markdown, "text/markdown"))
    for needle in forbidden:
        assert needle.lower() not in html.lower(), html


def test_markdown_renders_tables_code_and_safe_links() -> None:
    html = str(render_readme(
        "# Title\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nprint(1)\n```\n\n"
        "[docs](https://example.org/docs) <details><summary>more</summary>x</details>", "text/markdown"))
    assert "<h1>Title</h1>" in html and "<td>1</td>" in html
    assert '<code class="language-python">print(1)' in html
    assert '<a href="https://example.org/docs" rel="nofollow noopener noreferrer">docs</a>' in html
    assert "<details><summary>more</summary>" in html


def test_other_content_types_are_escaped_preformatted_text() -> None:
    html = str(render_readme("Title\n=====\n\n<script>alert(1)</script>", "text/x-rst"))
    assert html.startswith('<pre class="readme-plain">') and "&lt;script&gt;" in html and "<script" not in html


def test_empty_readme_renders_nothing() -> None:
    assert str(render_readme("  \n", "text/markdown")) == ""


def test_sanitize_keeps_plain_formatting() -> None:
    assert sanitize("<p><strong>bold</strong> <em>it</em> <code>x</code></p>") == \
        "<p><strong>bold</strong> <em>it</em> <code>x</code></p>"
