"""The shipped corpus (the Python 3.11 documentation as text) and its full-text index.

The index is SQLite's FTS5 (the standard library's ``sqlite3``), built in memory from ``data/corpus.jsonl.gz``
when first needed and shared by every environment of the process: it is read-only once built. Results are
ranked by FTS5's own ``bm25`` (a match in a title counts ``TITLE_WEIGHT`` times a match in the text); nothing
here re-ranks them.

What the model types is never handed to FTS5's query language as it is: :func:`fts_query` quotes every
whitespace-separated piece as a string, so ``AND``, ``NEAR(``, ``*`` or a stray ``"`` are words to look for,
not syntax, and a query is never malformed. The pieces are joined with ``OR``; bm25 puts the documents that
match the most (and the rarest) of them first.
"""

from __future__ import annotations

import difflib
import functools
import gzip
import json
import re
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files

TITLE_WEIGHT = 4.0
"""bm25 weight of the title column against 1.0 for the text: a section named for the query terms comes first."""

SNIPPET_TOKENS = 16
"""Tokens in a search result's snippet (FTS5's ``snippet``, which picks the passage with the most matches)."""


@dataclass(frozen=True)
class Document:
    """One section (or part of a long section) of a documentation page."""

    doc_id: str
    title: str
    page: str
    text: str


@functools.lru_cache(maxsize=1)
def read_corpus() -> tuple[Document, ...]:
    """The shipped documents, in ``doc_id`` order (read once per process)."""
    data = files("deep_research").joinpath("data", "corpus.jsonl.gz").read_bytes()
    rows = [json.loads(line) for line in gzip.decompress(data).decode("utf-8").splitlines() if line]
    return tuple(Document(r["doc_id"], r["title"], r["page"], r["text"]) for r in rows)


def fts_query(text: str) -> str | None:
    """``text`` as an FTS5 query in which every piece is a quoted string, joined by ``OR``; None when it has
    no word to search for.

    A piece keeps its inner punctuation, so ``os.listdir`` is the phrase "os listdir" to the tokenizer.

    >>> fts_query('os.listdir NEAR( say"so')
    '"os.listdir" OR "NEAR(" OR "say""so"'
    >>> fts_query("* ( )") is None
    True
    """
    pieces = [piece for piece in text.split() if re.search(r"\w", piece)]
    if not pieces:
        return None
    return " OR ".join('"' + piece.replace('"', '""') + '"' for piece in pieces)


@dataclass(frozen=True)
class Hit:
    doc_id: str
    title: str
    snippet: str


class SearchIndex:
    """An in-memory FTS5 index over documents: ``search`` by bm25, ``get`` by id.

    Safe to share between threads (one connection, queries under a lock).
    """

    def __init__(self, documents: Sequence[Document]) -> None:
        self.documents = {d.doc_id: d for d in documents}
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        # porter: "added" finds "add"; tokenchars '_': an identifier such as follow_symlinks stays one word.
        self._db.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(doc_id UNINDEXED, title, text, "
            "tokenize = \"porter unicode61 tokenchars '_'\")"
        )
        self._db.executemany("INSERT INTO docs (doc_id, title, text) VALUES (?, ?, ?)",
                             [(d.doc_id, d.title, d.text) for d in documents])
        self._db.commit()

    def search(self, query: str, limit: int) -> list[Hit]:
        """The ``limit`` best documents for ``query`` (see :func:`fts_query`), best first.

        Raises:
            ValueError: the query has no word to search for.
        """
        match = fts_query(query)
        if match is None:
            raise ValueError("the query has no words to search for")
        sql = (
            "SELECT doc_id, title, snippet(docs, 2, '[', ']', ' … ', ?) FROM docs WHERE docs MATCH ? "
            "ORDER BY bm25(docs, 0.0, ?, 1.0) LIMIT ?"
        )
        with self._lock:
            rows = self._db.execute(sql, (SNIPPET_TOKENS, match, TITLE_WEIGHT, limit)).fetchall()
        return [Hit(doc_id, title, " ".join(snippet.split())) for doc_id, title, snippet in rows]

    def get(self, doc_id: str) -> Document | None:
        return self.documents.get(doc_id)

    def similar_ids(self, doc_id: str, count: int = 3) -> list[str]:
        """Ids that look like ``doc_id`` (for an error message when it names no document)."""
        return difflib.get_close_matches(doc_id, list(self.documents), n=count, cutoff=0.6)


@functools.lru_cache(maxsize=1)
def default_index() -> SearchIndex:
    """The index of the shipped corpus, built on first use (a few seconds) and then shared."""
    return SearchIndex(read_corpus())
