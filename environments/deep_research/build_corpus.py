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
import json
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

try:
    from bs4 import BeautifulSoup
except ImportError:  # a build-time need only: the environment itself never parses HTML
    sys.exit("build_corpus.py needs Beautiful Soup: pip install 'beautifulsoup4>=4.12,<5'")

# Sibling modules: this script runs from its own folder (``python environments/deep_research/build_corpus.py``).
from build_docs import (
    DATA,
    HERE,
    MAX_DOC_CHARS,
    SECTIONS,
    Document,
    PyObject,
    Section,
    documents_of,
    read_deb,
    read_pages,
    render,
    walk_page,
)
from build_questions import Corpus, bridge_questions, comparison_questions, module_questions, unambiguous

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
