"""Build the deep-research corpus and questions from Debian's ``python3.11-doc`` package (run by a developer).

Nothing here runs when the environment loads: this script turns the HTML of the Python 3.11 documentation, as
Debian packages it, into the two data files the package ships, and copies the documentation's licence texts
next to them. Run it from the repository root::

    apt-get download python3.11-doc=3.11.2-6+deb12u9        # Debian's package of the CPython 3.11 docs
    pip install 'beautifulsoup4>=4.12,<5'                       # the HTML parser this script needs (only it)
    python environments/deep_research/build_corpus.py python3.11-doc_3.11.2-6+deb12u9_all.deb

What it writes (the same input gives byte-identical files):

* ``deep_research/data/corpus.jsonl.gz``: one document per line, ``doc_id``, ``title``, ``page``, ``text``.
  A document is one section of a page without its subsections (``library/os#files-and-directories``; the part
  of a page before its first section is ``library/os``); a section longer than ``MAX_DOC_CHARS`` is cut at
  block boundaries (paragraphs, definitions) into parts, each named by the first anchor it holds
  (``library/os#os.listdir``), so that what ``open`` shows is a whole document.
* ``deep_research/data/questions.jsonl.gz``: questions that need two documents, each with its answer, the ids
  of the documents that support it, and the page(s) the answer is read from: bridge questions that reach an
  object through a section or another object's description that mentions it (``bridge_questions``,
  ``description_questions``), questions about the one module of a section's modules added in a given version
  (``module_questions``), and comparisons of when two objects were added (``comparison_questions``).
* ``deep_research/data/manifest.json``: the package's version and sha256, and the counts.
* ``LICENSE.python-docs`` (the docs' "History and License" page as text) and ``debian-copyright`` (Debian's
  copyright file of the package, unchanged) in the package folder.

Text comes from Beautiful Soup's parse of each page; a small renderer here lays it out as plain text
(paragraph breaks, one line per list item, table row or signature, code kept as written).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import posixpath
import re
import sys
import tarfile
from collections import defaultdict
from collections.abc import Iterable, Iterator
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


# -- questions ---------------------------------------------------------------------------------------------


@dataclass
class Corpus:
    docs: dict[str, Document]
    sections: dict[str, Section]
    objects: dict[str, PyObject]
    modules: dict[str, str]
    """Module name -> the page that documents it."""
    anchor_docs: dict[tuple[str, str], str]
    """(page, anchor) -> the doc_id holding that anchor."""

    def subtree_docs(self, section_id: str) -> list[Document]:
        """The documents of a section and of every subsection under it."""
        found = []
        stack = [section_id]
        while stack:
            current = stack.pop()
            found += [d for d in self.docs.values() if d.section == current]
            stack += self.sections[current].children
        return found

    def page_module(self, page: str) -> str | None:
        names = [m for m, p in self.modules.items() if p == page]
        return min(names, key=len) if names else None

    def module_of(self, name: str) -> str | None:
        """The module a dotted object name belongs to: the longest documented module that prefixes it."""
        parts = name.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            candidate = ".".join(parts[:cut])
            if candidate in self.modules:
                return candidate
        return None


def describe(corpus: Corpus, section_id: str) -> str:
    """How a question names a section: by its page's title and its heading."""
    section = corpus.sections[section_id]
    if section.parent is None:
        return f"the page “{section.title}”"
    page_title, _, heading = section.title.partition(" › ")
    return f"the section “{heading}” of the page “{page_title}”"


def mentioned_names(text: str) -> set[str]:
    return {m.group(1) for m in _DOTTED.finditer(text)}


_KINDS = {"function": "function", "method": "method", "class": "class", "exception": "exception",
          "attribute": "attribute", "data": "data item"}
_MEMBER_KINDS = ("method", "attribute")


def bridge_questions(corpus: Corpus) -> list[dict]:
    """Questions that name an object only through a section that mentions it, and ask when it was added.

    For a section S (with its subsections) and an owner W documented on another page (a module, or a class):
    the dotted names S writes under W (``W.something``, in its text or as a link's target) pick out one
    object O, either because O is the only such name, or because it is the only function, class or exception
    among them (every other name being a documented object of another kind). O is documented on a page other
    than S's, its description has exactly one plain "New in version X.Y." note, and both the mention and the
    note are within the first ``MAX_DOC_CHARS`` characters of their documents. The question gives S, W and the
    kind, the answer is X.Y; supporting documents: the one in S that mentions O, then the one describing O.
    """
    questions = []
    for section_id, section in sorted(corpus.sections.items()):
        docs = corpus.subtree_docs(section_id)
        names = set().union(*(mentioned_names(d.text) for d in docs)) if docs else set()
        names |= {r.anchor for d in docs for r in d.refs if r.kind != "mod" and r.anchor in corpus.objects}
        own_module = corpus.page_module(section.page)
        by_owner: dict[str, set[str]] = defaultdict(set)
        for name in names:
            for cut in range(1, name.count(".") + 1):
                by_owner[name.rsplit(".", cut)[0]].add(name)
        for owner, group in sorted(by_owner.items()):
            for name, phrase in picks(corpus, owner, group, own_module, section.page):
                question = bridge_question(corpus, section_id, docs, name, phrase, section.page)
                if question is not None:
                    questions.append(question)
    return questions + description_questions(corpus)


def description_questions(corpus: Corpus) -> list[dict]:
    """Bridge questions whose first hop is one object's description instead of a section.

    As in ``bridge_questions``, with the description of an object H (its signature and text, when it holds no
    other definitions) in place of a section. One more kind: "exactly one other function of H's own module",
    when every call-like word in H's text is a link or a dotted name (so the count can be read off the text);
    then O may be on H's page, in another document.
    """
    questions = []
    for holder_name, holder in sorted(corpus.objects.items()):
        if holder.mentions is None or (holder.page, holder_name) not in corpus.anchor_docs:
            continue
        doc = corpus.docs[corpus.anchor_docs[(holder.page, holder_name)]]
        by_owner: dict[str, set[str]] = defaultdict(set)
        for name in holder.mentions - {holder_name}:
            for cut in range(1, name.count(".") + 1):
                by_owner[name.rsplit(".", cut)[0]].add(name)
        own_module = corpus.module_of(holder_name) or corpus.page_module(holder.page)
        scope = f"the description of the {_KINDS.get(holder.kind, holder.kind)} `{holder_name}`"
        for owner, group in sorted(by_owner.items()):
            found = [(name, phrase, False) for name, phrase in picks(corpus, owner, group, own_module, holder.page)]
            if owner == own_module and holder.calls_clear:
                functions = [n for n in group if n in corpus.objects and corpus.objects[n].kind == "function"]
                if len(functions) == 1 and corpus.module_of(functions[0]) == owner:
                    found.append((functions[0], f"exactly one other function of the `{owner}` module", True))
            for name, phrase, same_page in found:
                question = bridge_question(corpus, scope, [doc], name, phrase, holder.page, same_page,
                                           holder.shown.get(name, name))
                if question is not None:
                    questions.append(question)
    return questions


def picks(corpus: Corpus, owner: str, group: set[str], own_module: str | None, page: str) -> list[tuple[str, str]]:
    """The names a question may single out among ``group`` (the names written under ``owner``), each with how
    the question describes it ("exactly one name from the `os` module")."""
    if owner in corpus.modules:
        if owner == own_module or corpus.modules[owner] == page:
            return []
        where = f"the `{owner}` module"
        direct = [n for n in group if corpus.module_of(n) == owner]
        if len(group) == 1:
            return [(n, f"exactly one name from {where}") for n in direct]
        kinds = {n: corpus.objects[n].kind if n in corpus.objects else "module" if n in corpus.modules else None
                 for n in group}
        if None in kinds.values():
            return []  # a name of unknown kind: "the only function" could not be checked
        found = []
        for kind in ("function", "class", "exception"):
            members = [n for n in group if kinds[n] == kind]
            if len(members) == 1 and members[0] in direct:
                found.append((members[0], f"exactly one {kind} of {where}"))
        return found
    owner_object = corpus.objects.get(owner)
    if owner_object is None or owner_object.kind not in ("class", "exception") or owner_object.page == page:
        return []
    members = [n for n in group if n.rsplit(".", 1)[0] == owner]
    if len(group) == 1 and members and corpus.objects.get(members[0], owner_object).kind in _MEMBER_KINDS:
        return [(members[0], f"exactly one method or attribute of the `{owner}` {owner_object.kind}")]
    return []


def bridge_question(corpus: Corpus, scope: str, docs: list[Document], name: str, phrase: str, page: str,
                    same_page: bool = False, shown: str | None = None) -> dict | None:
    """The bridge question about ``name`` through ``scope`` (a section's doc_id, or the words naming an object's
    description) on ``page``, or None when an evidence check fails. ``same_page``: the object may be documented
    on ``page`` too, in another document; ``shown``: how the scope's text writes the name, if not in full."""
    obj = corpus.objects.get(name)
    if obj is None or (obj.page == page and not same_page) or len(obj.versions) != 1:
        return None
    holder = next((d for d in docs if name in mentioned_names(d.text[:MAX_DOC_CHARS])
                   or (shown and shown in d.text[:MAX_DOC_CHARS])), None)
    target_doc = corpus.anchor_docs.get((obj.page, name))
    if holder is None or target_doc is None or corpus.docs[target_doc].anchors[name][1] > MAX_DOC_CHARS:
        return None
    if target_doc == holder.doc_id:
        return None  # one document would answer it
    where = describe(corpus, scope) if scope in corpus.sections else scope
    question = (
        f"In the Python 3.11 documentation, {where} mentions {phrase}. According to "
        f"its own documentation, in which version of Python was it added? Answer with the version number only "
        f"(for example 3.4)."
    )
    return {
        "kind": "bridge_version", "question": question, "answer": obj.versions[0],
        "supporting_doc_ids": [holder.doc_id, target_doc], "answer_pages": [obj.page],
        "info": {"scope": scope, "bridge_entity": name, "entity_kind": _KINDS.get(obj.kind, obj.kind)},
    }


def module_questions(corpus: Corpus) -> list[dict]:
    """Questions that ask which of the modules a section links to was added in a given version.

    For a section S linking (in its first ``MAX_DOC_CHARS`` characters, with the module's name as the link's
    text) to two or more modules documented on other pages: exactly one of them, M, has a plain "New in version
    X.Y." note directly in the section that documents it, and every other one has none or another version.
    The question gives S and X.Y; the answer is M. Supporting documents: S's document with the link, then M's.
    """
    questions = []
    notes: dict[str, list[str]] = {}
    note_docs: dict[str, str] = {}
    for section in corpus.sections.values():
        for module, versions in section.module_notes.items():
            notes.setdefault(module, versions)
            note_docs.setdefault(module, section.doc_id)
    for section_id, section in sorted(corpus.sections.items()):
        docs = corpus.subtree_docs(section_id)
        linked: dict[str, Document] = {}
        for doc in docs:
            for ref in doc.refs:
                module = ref.anchor.removeprefix("module-")
                if ref.kind != "mod" or not ref.anchor.startswith("module-") or ref.shown != module:
                    continue
                if module not in corpus.modules or corpus.modules[module] == section.page:
                    continue
                position = doc.text.find(module)
                if 0 <= position < MAX_DOC_CHARS:
                    linked.setdefault(module, doc)
        if len(linked) < 2:
            continue
        added: dict[str, list[str]] = defaultdict(list)
        for module in linked:
            versions = notes.get(module, [])
            if len(versions) > 1:
                added.clear()
                break
            if versions:
                added[versions[0]].append(module)
        for version, modules in sorted(added.items()):
            if len(modules) != 1:
                continue
            (module,) = modules
            target_doc = first_doc(corpus, note_docs[module])
            question = (
                f"In the Python 3.11 documentation, {describe(corpus, section_id)} refers to several modules. "
                f"Exactly one of them was added in Python {version}, as a note on that module's own "
                f"documentation page says. Which module is it? Answer with the module's name only."
            )
            questions.append({
                "kind": "bridge_module", "question": question, "answer": module,
                "supporting_doc_ids": [linked[module].doc_id, target_doc], "answer_pages": [corpus.modules[module]],
                "info": {"scope": section_id, "bridge_entity": module,
                         "entity_kind": "module", "candidates": sorted(linked)},
            })
    return questions


COMPARISONS = 150
"""How many comparison questions to keep (a minority: the bridge questions are the point)."""


def page_bucket(page: str) -> float:
    """Where a page falls in [0, 1): the environment puts a question in its eval split when the bucket of its
    answer page is below ``eval_share`` (the same formula as ``deep_research.questions.page_bucket``)."""
    return int.from_bytes(hashlib.sha256(page.encode("utf-8")).digest()[:8], "big") / 2**64


def comparison_questions(corpus: Corpus) -> list[dict]:
    """Questions that compare when two objects documented on different pages were added.

    Objects with exactly one plain "New in version X.Y." note, within the first ``MAX_DOC_CHARS`` characters of
    their document, are paired with a neighbour in the order of their pages' split buckets (so both answer
    pages of a pair fall on the same side of almost any ``eval_share``), each object at most once, pairs with
    equal versions skipped. The answer is the number of minor versions between them; supporting documents:
    both objects' documents.
    """
    candidates = []
    for name, obj in sorted(corpus.objects.items()):
        doc_id = corpus.anchor_docs.get((obj.page, name))
        if "." not in name or len(obj.versions) != 1 or doc_id is None:
            continue
        if corpus.docs[doc_id].anchors[name][1] <= MAX_DOC_CHARS and obj.versions[0].startswith("3."):
            candidates.append((page_bucket(obj.page), hashlib.sha256(name.encode()).hexdigest(), name, doc_id))
    candidates.sort()
    questions = []
    index = 0
    while index + 1 < len(candidates):
        (_, _, first, first_doc_id), (_, _, second, second_doc_id) = candidates[index], candidates[index + 1]
        a, b = corpus.objects[first], corpus.objects[second]
        if a.page == b.page or a.versions == b.versions:
            index += 1
            continue
        gap = abs(int(a.versions[0].split(".")[1]) - int(b.versions[0].split(".")[1]))
        question = (
            f"According to the Python 3.11 documentation, `{first}` and `{second}` were added in different "
            f"versions of Python 3. How many minor versions apart were they added (3.3 and 3.5 are 2 apart)? "
            f"Answer with a number only."
        )
        questions.append({
            "kind": "comparison", "question": question, "answer": str(gap),
            "supporting_doc_ids": [first_doc_id, second_doc_id],
            "answer_pages": sorted({a.page, b.page}),
            "info": {"scope": first, "bridge_entity": f"{first}|{second}", "entity_kind": "comparison"},
        })
        index += 2
    questions.sort(key=lambda q: hashlib.sha256(q["question"].encode()).hexdigest())
    return questions[:COMPARISONS]


def first_doc(corpus: Corpus, section_id: str) -> str:
    """The first document (part) of a section, where its module note is."""
    return next(d.doc_id for d in corpus.docs.values() if d.section == section_id)


def unambiguous(questions: Iterable[dict]) -> list[dict]:
    """Drop question texts asked twice, and keep at most two questions per answer entity (so one function
    linked from many pages does not dominate); ids follow the order of the texts."""
    by_text: dict[str, list[dict]] = defaultdict(list)
    for question in questions:
        by_text[question["question"]].append(question)
    kept: list[dict] = []
    per_entity: dict[tuple[str, str], int] = defaultdict(int)
    for text in sorted(by_text):
        if len(by_text[text]) != 1:
            continue
        question = by_text[text][0]
        entity = (question["kind"], question["info"]["bridge_entity"])
        if per_entity[entity] >= 2:
            continue
        per_entity[entity] += 1
        kept.append(question)
    kept.sort(key=lambda q: (q["kind"], q["info"]["scope"], q["info"]["bridge_entity"]))
    for number, question in enumerate(kept):
        question["id"] = f"{question['kind']}/{number:04d}"
    return kept


# -- the build ---------------------------------------------------------------------------------------------


def build(files: dict[str, bytes]) -> tuple[Corpus, list[dict]]:
    objects: dict[str, PyObject] = {}
    modules: dict[str, str] = {}
    sections: dict[str, Section] = {}
    for path, soup in read_pages(files):
        for section in walk_page(path, soup, objects, modules):
            sections[section.doc_id] = section
    docs: dict[str, Document] = {}
    for section in sections.values():
        for doc in documents_of(section):
            if doc.doc_id in docs:
                raise SystemExit(f"two documents would be named {doc.doc_id!r}")
            docs[doc.doc_id] = doc
    anchor_docs = {(d.page, anchor): d.doc_id for d in docs.values() for anchor in d.anchors}
    corpus = Corpus(docs=docs, sections=sections, objects=objects, modules=modules, anchor_docs=anchor_docs)
    questions = unambiguous([*bridge_questions(corpus), *module_questions(corpus), *comparison_questions(corpus)])
    return corpus, questions


def write_gz_jsonl(path: Path, rows: Iterable[dict]) -> int:
    payload = "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows).encode("utf-8")
    blob = gzip.compress(payload, compresslevel=9, mtime=0)  # mtime 0: the same input, the same bytes
    path.write_bytes(blob)
    return len(blob)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("deb", type=Path, help="python3.11-doc_<version>_all.deb, from `apt-get download`")
    parser.add_argument("--out", type=Path, default=DATA, help="folder for the data files")
    args = parser.parse_args(argv)
    files = read_deb(args.deb)
    corpus, questions = build(files)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = [{"doc_id": d.doc_id, "title": d.title, "page": d.page, "text": d.text}
            for d in sorted(corpus.docs.values(), key=lambda d: d.doc_id) if d.text.strip()]
    corpus_bytes = write_gz_jsonl(args.out / "corpus.jsonl.gz", rows)
    known = {r["doc_id"] for r in rows}
    questions = [q for q in questions if all(d in known for d in q["supporting_doc_ids"])]
    question_bytes = write_gz_jsonl(args.out / "questions.jsonl.gz", questions)
    licence = BeautifulSoup(files["license.html"].decode("utf-8"), "html.parser").find("div", attrs={"role": "main"})
    (HERE / "LICENSE.python-docs").write_text(render(licence) + "\n", encoding="utf-8")
    (HERE / "debian-copyright").write_bytes(files["../copyright"])
    kinds: dict[str, int] = defaultdict(int)
    for question in questions:
        kinds[question["kind"]] += 1
    manifest = {
        "source": {"package": args.deb.name, "sha256": hashlib.sha256(args.deb.read_bytes()).hexdigest(),
                   "folders": list(SECTIONS)},
        "documents": len(rows), "pages": len({r["page"] for r in rows}),
        "text_chars": sum(len(r["text"]) for r in rows), "corpus_gz_bytes": corpus_bytes,
        "questions": len(questions), "question_kinds": dict(sorted(kinds.items())),
        "questions_gz_bytes": question_bytes,
        "max_doc_chars": MAX_DOC_CHARS,
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(manifest, indent=2))


if __name__ == "__main__":
    main()
