"""Multi-hop questions over the documents ``build_docs`` makes: bridge, description, module and comparison
questions, each needing two documents, with unambiguous answers. Used by ``build_corpus.py``."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from build_docs import MAX_DOC_CHARS, Document, PyObject, Section, mentioned_names

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


