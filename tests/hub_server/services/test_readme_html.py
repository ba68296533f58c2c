"""README rendering: markdown becomes HTML, and nothing that runs script survives the sanitiser."""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from hub_server.services.readme_html import MAX_README_CHARS, render_readme, sanitize


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
    html = str(render_readme("Title\n=====\n\n<script>alert(1)</script>", "text/plain"))
    assert html.startswith('<pre class="readme-plain">') and "&lt;script&gt;" in html and "<script" not in html


def test_rst_renders_headings_links_code_and_tables() -> None:
    html = str(render_readme(
        "Reverse text\n============\n\nSome *text*, ``code`` and `docs <https://example.org/docs>`_.\n\n"
        ".. code:: python\n\n   print(1)\n\n+---+---+\n| a | b |\n+---+---+\n\nUnclosed *emphasis\n",
        "text/x-rst; charset=UTF-8"))
    assert "<h2>Reverse text</h2>" in html and "<em>text</em>" in html
    assert '<a href="https://example.org/docs" rel="nofollow noopener noreferrer">docs</a>' in html
    assert "<pre><code>print(1)</code></pre>" in html and "<td><p>a</p></td>" in html
    assert "Unclosed *emphasis" in html and "System Message" not in html  # bad markup: no error report


def test_rst_cannot_run_script_read_files_or_fetch_urls(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    html = str(render_readme(
        "Title\n=====\n\n.. raw:: html\n\n   <script>alert(1)</script>\n\n"
        f".. include:: {secret}\n\n.. csv-table:: leak\n   :file: {secret}\n\n"
        ".. csv-table:: fetch\n   :url: http://127.0.0.1:9/x.csv\n\n"
        "`click <javascript:alert(2)>`_ and .. image:: data:image/png;base64,AAAA\n\n"
        ".. image:: javascript:alert(3)\n\n"
        ".. |sub| replace:: <img src=x onerror=alert(4)>\n\n|sub|\n", "text/x-rst"))
    assert "<script" not in html and "alert(1)" not in html and "TOP-SECRET" not in html
    for tag, name, value in _attributes(html):
        assert not name.startswith("on") and name != "style", (tag, name)
        if name in ("href", "src"):
            assert (value or "").startswith(("https://", "http://", "mailto:")), (tag, name, value)
    assert "&lt;img src=x onerror=alert(4)&gt;" in html  # shown as text, harmless


def _attributes(html: str) -> list[tuple[str, str, str | None]]:
    found: list[tuple[str, str, str | None]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.extend((tag, name, value) for name, value in attrs)

    Collect().feed(html)
    return found


def test_rst_without_docutils_is_preformatted_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "docutils.core", None)  # what a missing package looks like to import
    html = str(render_readme("Title\n=====\n\n<b>x</b>", "text/x-rst"))
    assert html.startswith('<pre class="readme-plain">') and "&lt;b&gt;" in html


def test_without_a_content_type_valid_rst_renders_and_anything_else_is_plain_text() -> None:
    rst = str(render_readme("Reverse text\n============\n\nSome *text* and ``code``.\n", ""))
    assert "<h2>Reverse text</h2>" in rst and "<em>text</em>" in rst
    prose = str(render_readme("A plain description.\nOn two lines.\n", ""))
    assert prose.strip().startswith("<p>") and "A plain description." in prose  # plain prose is valid reST too
    broken = "Notes\n=====\n\n* a list\nnot indented  <b>x</b>\n\n.. unknown-directive:: x\n"
    html = str(render_readme(broken, ""))
    assert html.startswith('<pre class="readme-plain">') and "&lt;b&gt;" in html  # an error as reST: text
    assert "System Message" not in html
    explicit = str(render_readme(broken, "text/x-rst"))  # declared reST renders what parses, as before
    assert not explicit.startswith("<pre")


def test_markdown_over_its_cpu_budget_is_shown_as_escaped_text() -> None:
    pathological = "[" * 200_000 + "<script>x</script>"  # every bracket tries to open a link label
    html = str(render_readme(pathological, "text/markdown", budget_s=0.05))
    assert html.startswith('<pre class="readme-plain">[[[') and "&lt;script&gt;" in html and "<script" not in html
    normal = str(render_readme("# Title\n\n[a link](https://example.org)", "text/markdown", budget_s=0.05))
    assert "<h1>Title</h1>" in normal and 'href="https://example.org"' in normal


def test_only_the_first_max_readme_chars_are_rendered() -> None:
    html = str(render_readme("a" * (MAX_README_CHARS + 10) + "TAIL", "text/plain"))
    assert "TAIL" not in html and html.count("a") >= MAX_README_CHARS


def test_empty_readme_renders_nothing() -> None:
    assert str(render_readme("  \n", "text/markdown")) == ""


def test_sanitize_keeps_plain_formatting() -> None:
    assert sanitize("<p><strong>bold</strong> <em>it</em> <code>x</code></p>") == \
        "<p><strong>bold</strong> <em>it</em> <code>x</code></p>"
