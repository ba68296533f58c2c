"""Documents for the deep-research corpus: reading Debian's ``python3.11-doc`` package and laying its HTML
out as plain-text documents, one per section (or part of a long section). Used by ``build_corpus.py``."""


from __future__ import annotations

import io
import posixpath
import re
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

try:
    from bs4 import BeautifulSoup, NavigableString, Tag
    from bs4.element import Comment
except ImportError:  # a build-time need only: the environment itself never parses HTML
    sys.exit("build_corpus.py needs Beautiful Soup: pip install 'beautifulsoup4>=4.12,<5'")


HERE = Path(__file__).resolve().parent
DATA = HERE / "deep_research" / "data"
HTML_ROOT = "usr/share/doc/python3.11/html/"
SECTIONS = ("library", "reference", "tutorial")
"""Folders of the documentation that become documents: the library reference, the language reference, the
tutorial."""

MAX_DOC_CHARS = 6000
"""A section's text longer than this is cut into parts; ``open`` shows 8,000 characters by default, so a whole
part (and so every fact a question relies on) is always shown."""

_NOTE = re.compile(r"New in version (\d+\.\d+)\.")
# A dotted Python name as the docs write it in running text: ``shutil.copyfile()``, ``os.path.join``.
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)")
_BLOCK_TAGS = {
    "address", "article", "aside", "blockquote", "dd", "div", "dl", "dt", "figure", "footer", "form", "h1",
    "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "ol", "p", "section", "table", "tbody", "thead", "tr",
    "ul", "caption", "figcaption",
}
_LINE_TAGS = {"li", "dt", "tr", "br", "caption"}
_PARAGRAPH, _LINE = "\x00", "\x01"  # markers the renderer leaves, resolved into blank lines and line breaks


# -- reading the package -----------------------------------------------------------------------------------


def read_deb(path: Path) -> dict[str, bytes]:
    """The files under the package's HTML folder, by path relative to it (``library/os.html``).

    A ``.deb`` is an ``ar`` archive whose ``data.tar.*`` member holds the files; both are read here without
    ``dpkg``, so the build runs wherever Python does.
    """
    blob = path.read_bytes()
    if not blob.startswith(b"!<arch>\n"):
        raise SystemExit(f"{path} is not a Debian package (no ar header)")
    offset, data = 8, None
    while offset + 60 <= len(blob):
        header = blob[offset : offset + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        if name.startswith("data.tar"):
            data = blob[offset + 60 : offset + 60 + size]
        offset += 60 + size + (size % 2)  # members are padded to an even length
    if data is None:
        raise SystemExit(f"{path} has no data.tar member")
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
        for member in archive:
            name = member.name.removeprefix("./")
            if member.isfile() and name.startswith(HTML_ROOT):
                extracted = archive.extractfile(member)
                assert extracted is not None
                files[name[len(HTML_ROOT) :]] = extracted.read()
            elif member.isfile() and name == "usr/share/doc/python3.11-doc/copyright":
                extracted = archive.extractfile(member)
                assert extracted is not None
                files["../copyright"] = extracted.read()
    return files


# -- rendering HTML as text --------------------------------------------------------------------------------


def render(node: Tag) -> str:
    """``node``'s text laid out as plain text (see the module docstring)."""
    out: list[str] = []
    _render_into(node, out, pre=False)
    return _resolve_markers("".join(out))


def _render_into(node: Tag | NavigableString, out: list[str], pre: bool) -> None:
    if isinstance(node, Comment):
        return
    if isinstance(node, NavigableString):
        text = str(node)
        out.append(text if pre else re.sub(r"\s+", " ", text))
        return
    classes = node.get("class") or []
    if node.name in ("script", "style") or "headerlink" in classes:
        return  # the pilcrow after every heading and signature is a permalink, not text
    if node.name == "pre":
        out.append(_PARAGRAPH + node.get_text().rstrip() + _PARAGRAPH)
        return
    if node.name == "br":
        out.append(_LINE)
        return
    if node.name == "li":
        # The bullet goes before the item's first paragraph, not on a line of its own.
        inner: list[str] = []
        for child in node.children:
            _render_into(child, inner, pre)
        out.append(_LINE + "- " + _resolve_markers("".join(inner)) + _LINE)
        return
    breaker = _LINE if node.name in _LINE_TAGS else _PARAGRAPH if node.name in _BLOCK_TAGS else ""
    out.append(breaker)
    cells = node.name == "tr"
    first = True
    for child in node.children:
        if cells and isinstance(child, Tag) and child.name in ("td", "th"):
            if not first:
                out.append(" | ")
            first = False
            out.append(re.sub(r"\s+", " ", render(child)).strip())
            continue
        _render_into(child, out, pre)
    out.append(breaker)


def _resolve_markers(text: str) -> str:
    """Runs of markers become one blank line (any paragraph marker) or one line break; spaces around go."""

    def resolve(match: re.Match[str]) -> str:
        return "\n\n" if _PARAGRAPH in match.group(1) else "\n"

    text = re.sub(r"[ \t]*([\x00\x01][\x00\x01 \t]*)", resolve, text)
    lines = [line.rstrip() for line in text.strip().split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines))


# -- documents ---------------------------------------------------------------------------------------------


@dataclass
class Ref:
    """A cross-reference in a document's text: where it points and what the reader sees."""

    kind: str  # the Sphinx role: func, meth, class, exc, data, attr, const, mod
    page: str
    anchor: str
    shown: str


@dataclass
class Block:
    """One top-level piece of a section's own content, rendered, with the anchors it holds."""

    text: str
    ids: list[str]
    refs: list[Ref] = field(default_factory=list)


@dataclass
class Document:
    doc_id: str
    title: str
    page: str
    section: str
    """The doc_id of the section this document is (a part of); its subtree is what a question calls 'the
    section'."""
    text: str = ""
    anchors: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Anchor id -> (start, end) character offsets, in ``text``, of the block that holds it."""
    refs: list[Ref] = field(default_factory=list)


@dataclass
class Section:
    doc_id: str
    title: str
    page: str
    parent: str | None
    blocks: list[Block]
    children: list[str] = field(default_factory=list)
    module_notes: dict[str, list[str]] = field(default_factory=dict)
    """Module documented here -> versions of the plain "New in version X.Y." notes directly in this section."""


@dataclass
class PyObject:
    """A documented Python object (a ``<dl class="py ...">`` signature with an anchor)."""

    name: str
    kind: str
    page: str
    versions: list[str]
    """Versions of the plain "New in version X.Y." notes directly in its description (not in its members')."""
    mentions: set[str] | None = None
    """The dotted names its signature and description write or link to; None when the description holds
    other definitions (a class with its methods), whose scope a question could not state plainly."""
    shown: dict[str, str] = field(default_factory=dict)
    """Link target -> the text the reader sees for it (``walk()`` for ``os.walk``)."""
    calls_clear: bool = False
    """Whether every call-like word in its text (``walk()``) is a link or a dotted name, so that the functions
    it mentions can be counted from the text alone."""


def page_key(path: str) -> str:
    return path.removesuffix(".html")


def read_pages(files: dict[str, bytes]) -> Iterator[tuple[str, BeautifulSoup]]:
    for path in sorted(files):
        if path.split("/", 1)[0] in SECTIONS and path.endswith(".html") and path.count("/") == 1:
            yield path, BeautifulSoup(files[path].decode("utf-8"), "html.parser")


def heading_text(section: Tag) -> str:
    heading = next((c for c in section.children if isinstance(c, Tag) and re.fullmatch(r"h[1-6]", c.name)), None)
    return render(heading).replace("\n", " ") if heading is not None else str(section.get("id", ""))


def walk_page(path: str, soup: BeautifulSoup, objects: dict[str, PyObject], modules: dict[str, str]) -> list[Section]:
    """The sections of one page, top first, each with its own blocks (its subsections excluded)."""
    body = soup.find("div", attrs={"role": "main"})
    top = body.find("section") if body is not None else None
    if top is None:
        return []
    key = page_key(path)
    for dl in body.find_all("dl", class_="py"):
        kind = next((c for c in dl.get("class", []) if c != "py"), "")
        dd = dl.find("dd", recursive=False)
        versions = direct_notes(dd) if dd is not None else []
        mentions, shown, clear = None, {}, False
        if dd is not None and dd.find("dl", class_="py") is None:
            text = render(dl)
            refs = [r for r in find_refs(dl, path) if r.kind != "mod"]
            mentions = mentioned_names(text) | {r.anchor for r in refs}
            shown = {r.anchor: r.shown for r in refs}
            calls = set(re.findall(r"(?<![\w.])([A-Za-z_][\w.]*\(\))", text))
            clear = calls <= set(shown.values()) | {f"{n}()" for n in mentions}
        for dt in dl.find_all("dt", recursive=False):
            if dt.get("id"):
                objects.setdefault(dt["id"], PyObject(name=dt["id"], kind=kind, page=key, versions=versions,
                                                      mentions=mentions, shown=shown, calls_clear=clear))
    sections: list[Section] = []

    def visit(node: Tag, parent: Section | None, trail: list[str]) -> None:
        title_trail = [*trail, heading_text(node)]
        own = [c for c in node.children if not (isinstance(c, Tag) and c.name == "section")]
        section = Section(doc_id=key if parent is None else f"{key}#{node['id']}", title=" › ".join(title_trail),
                          page=key, parent=parent.doc_id if parent else None,
                          blocks=[b for child in own for b in split_block(child, path)])
        # A module's target is the section itself or a <span id="module-X"> in its own text, never in a member.
        holders = [node, *(t for c in own if isinstance(c, Tag) and c.name != "dl"
                           for t in [c, *c.find_all(id=re.compile(r"^module-"))])]
        for holder in holders:
            anchor = str(holder.get("id", ""))
            if anchor.startswith("module-"):
                module = anchor.removeprefix("module-")
                modules.setdefault(module, key)
                section.module_notes[module] = direct_notes(node)
        sections.append(section)
        if parent is not None:
            parent.children.append(section.doc_id)
        for child in node.find_all("section", recursive=False):
            visit(child, section, title_trail)

    visit(top, None, [])
    return sections


def direct_notes(container: Tag) -> list[str]:
    """Versions of the plain "New in version X.Y." notes that are direct children of ``container``."""
    versions = []
    for div in container.find_all("div", class_="versionadded", recursive=False):
        match = _NOTE.fullmatch(div.get_text(" ", strip=True))
        if match:
            versions.append(match.group(1))
    return versions


def split_block(node: Tag | NavigableString, path: str) -> list[Block]:
    """``node`` as blocks: itself, or, for a definition longer than a document may be, its pieces (signature,
    description paragraphs, each member's definition), so a long class is cut between its members."""
    if isinstance(node, NavigableString):
        text = "" if isinstance(node, Comment) else re.sub(r"\s+", " ", str(node)).strip()
        return [Block(text, [])] if text else []
    text = render(node)
    splittable = node.name == "dl" or (node.name == "div" and "highlight" not in (node.get("class") or []))
    if len(text) > MAX_DOC_CHARS and splittable:
        children = [c for child in node.children
                    for c in (child.children if isinstance(child, Tag) and child.name == "dd" else [child])]
        pieces = [piece for child in children for piece in split_block(child, path)]
        if len(pieces) > 1:
            return pieces
    ids = ([str(node["id"])] if node.get("id") else []) + [str(t["id"]) for t in node.find_all(id=True)]
    return [Block(text, ids, find_refs(node, path))] if text else []


def find_refs(node: Tag, path: str) -> list[Ref]:
    """The cross-references to Python objects and modules in ``node``."""
    refs = []
    for link in node.find_all("a", class_="reference"):
        code = link.find("code", class_="xref")
        href = link.get("href", "")
        if code is None or "internal" not in (link.get("class") or []):
            continue
        role = next((c.removeprefix("py-") for c in code.get("class", []) if c.startswith("py-")), None)
        if role is None:
            continue
        target, _, anchor = href.partition("#")
        page = page_key(posixpath.normpath(posixpath.join(posixpath.dirname(path), target))) if target else \
            page_key(path)
        refs.append(Ref(kind=role, page=page, anchor=anchor, shown=code.get_text().strip()))
    return refs


def documents_of(section: Section) -> list[Document]:
    """The section's own blocks as one document, or as parts of at most ``MAX_DOC_CHARS`` (a single longer
    block is a part of its own; ``open`` cuts it)."""
    groups: list[list[Block]] = [[]]
    size = 0
    for block in section.blocks:
        if groups[-1] and size + len(block.text) + 2 > MAX_DOC_CHARS:
            groups.append([])
            size = 0
        groups[-1].append(block)
        size += len(block.text) + 2
    docs = []
    for number, group in enumerate(groups, 1):
        anchor = next((i for b in group for i in b.ids), None)
        doc_id = section.doc_id
        title = section.title
        if number > 1:
            doc_id = f"{section.page}#{anchor}" if anchor else f"{section.doc_id}-part-{number}"
        if len(groups) > 1:
            title = f"{section.title} (part {number} of {len(groups)})"
        doc = Document(doc_id=doc_id, title=title, page=section.page, section=section.doc_id)
        offset = 0
        pieces = []
        for block in group:
            for anchor_id in block.ids:
                doc.anchors.setdefault(anchor_id, (offset, offset + len(block.text)))
            pieces.append(block.text)
            doc.refs.extend(block.refs)
            offset += len(block.text) + 2
        doc.text = "\n\n".join(pieces)
        docs.append(doc)
    return docs

def mentioned_names(text: str) -> set[str]:
    return {m.group(1) for m in _DOTTED.finditer(text)}

