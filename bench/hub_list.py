"""Hub web list benchmark: one page of environment cards as the catalogue grows, against loading every match.

The list page (``/`` and ``/<owner>``) filters, sorts and pages in SQL and loads only the page's
projects (``hub_server/services/listing.py``). The peer is the way it worked before: load the view
of every matching project and sort in Python (``catalog.views_of`` on all matches, then a sort: the core of
the old page, so a lower bound of its cost),
timed in the same run on the same database. Each catalogue size gets its own SQLite database of
synthetic projects (three owners, three versions each with a wheel and an sdist, download counts,
keywords drawn from a few topics); figures are medians of ``--repeats`` rounds, each timing every
figure in turn, in milliseconds::

    .venv/bin/python bench/hub_list.py                 # 300 and 3,000 projects, 7 repeats
    .venv/bin/python bench/hub_list.py --quick         # 100 projects, 3 repeats (smoke run)
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hub_server.db import Database  # noqa: E402
from hub_server.db.models import File, Owner, Project, Release  # noqa: E402
from hub_server.db.records import DownloadCount  # noqa: E402
from hub_server.services import catalog  # noqa: E402
from hub_server.services.card_tags import tags_of  # noqa: E402
from hub_server.services.listing import list_environments  # noqa: E402

TOPICS = ("math", "games", "code", "wordle", "tools", "agents")
VERSIONS = ("1.0.0", "1.1.0", "2.0.0")
PAGE = 30


@dataclass(frozen=True)
class Row:
    """One catalogue size's figures, in milliseconds."""

    projects: int
    first_page: float
    middle_page: float
    by_update: float
    by_tag: float
    load_all: float

    @property
    def ratio(self) -> float:
        """How many times longer loading every match takes than the first page."""
        return self.load_all / self.first_page


def build(db: Database, projects: int) -> None:
    """``projects`` synthetic environments, each with three versions, two files per version and downloads."""
    now = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    with db.write() as session:
        owners = [Owner(name=name, kind="user") for name in ("alice", "bob", "carol")]
        session.add_all(owners)
        session.flush()
        for i in range(projects):
            name = f"env-{i:05d}"
            keywords = [f"{TOPICS[(i + k) % len(TOPICS)]},rl" for k in range(len(VERSIONS))]
            project = Project(owner_id=owners[i % 3].id, name=name, normalized=name, private=False,
                              quarantined=False,
                              card_tags=tags_of((v, False, True, k) for v, k in zip(VERSIONS, keywords)))
            session.add(project)
            session.flush()
            for k, version in enumerate(VERSIONS):
                release = Release(project_id=project.id, version=version, canonical_version=version, yanked=False,
                                  summary=f"Environment {i} about {TOPICS[i % len(TOPICS)]}.",
                                  keywords=keywords[k], created_at=now + dt.timedelta(minutes=i * 3 + k))
                session.add(release)
                session.flush()
                for filename, kind in ((f"{name.replace('-', '_')}-{version}-py3-none-any.whl", "bdist_wheel"),
                                       (f"{name.replace('-', '_')}-{version}.tar.gz", "sdist")):
                    file = File(release_id=release.id, filename=filename, packagetype=kind, size=1000,
                                sha256=f"{i:032d}{k:032d}", blake2_256="0" * 64, uploaded_by_id=owners[0].id)
                    session.add(file)
                    session.flush()
                    session.add(DownloadCount(file_id=file.id, day=now.date(), count=(i * 7919 + k) % 1000))


def _load_all(db: Database) -> None:
    """The old page: every match's view, sorted in Python."""
    with db.read() as session:
        views = catalog.views_of(session, list(session.scalars(catalog.matching_projects(None))))
        views.sort(key=lambda v: (v.latest or "", v.name))


def _medians_ms(calls: list[Callable[[], object]], repeats: int) -> list[float]:
    """Median milliseconds of each call; every round times all of them in turn, so a slow moment on a
    shared machine hits the SQL pages and the load-everything peer alike."""
    for call in calls:
        call()  # warm the engine and SQLite's page cache
    times: list[list[float]] = [[] for _ in calls]
    for _ in range(repeats):
        for call, timing in zip(calls, times):
            start = time.perf_counter()
            call()
            timing.append((time.perf_counter() - start) * 1000)
    return [statistics.median(t) for t in times]


def measure(projects: int, repeats: int, work: Path) -> Row:
    db = Database(f"sqlite:///{work}/hub-{projects}.sqlite3")
    db.migrate()
    build(db, projects)

    def page(**kwargs: object) -> Callable[[], object]:
        def call() -> object:
            with db.read() as session:
                return list_environments(session, None, limit=PAGE, **kwargs)  # type: ignore[arg-type]
        return call

    try:
        calls = [page(), page(offset=projects // 2), page(sort="updated"), page(tag="wordle"), lambda: _load_all(db)]
        return Row(projects, *_medians_ms(calls, repeats))
    finally:
        db.dispose()


def report(rows: list[Row]) -> str:
    lines = ["| projects | first page | middle page | by update | tag filter | load every match | ratio |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r.projects:,} | {r.first_page:.1f} | {r.middle_page:.1f} | {r.by_update:.1f} | {r.by_tag:.1f} "
              f"| {r.load_all:.1f} | {r.ratio:.1f}× |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 3000], help="catalogue sizes to measure")
    parser.add_argument("--repeats", type=int, default=7, help="timed calls per figure (the median is shown)")
    parser.add_argument("--quick", action="store_true", help="100 projects, 3 repeats")
    args = parser.parse_args(argv)
    sizes, repeats = ([100], 3) if args.quick else (args.sizes, args.repeats)
    if min(sizes) < 1 or repeats < 1:
        parser.error("--sizes and --repeats must be positive")
    with tempfile.TemporaryDirectory(prefix="hub-list-") as work:
        rows = [measure(n, repeats, Path(work)) for n in sizes]
    print(f"milliseconds per page of {PAGE} cards (median of {repeats})")
    print(report(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
