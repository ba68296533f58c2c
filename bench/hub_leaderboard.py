"""Hub leaderboard benchmark: an environment page with 1,000 pushed results, each carrying large metadata.

Before, the page's leaderboard loaded every result of the project whole — its full ``run_metadata`` (the
push accepted 16 MiB of extra keys) and its summary (up to 64 KB, printed into the page for every row) —
and sorted in Python; 40 hostile pushes took one view from 0.04 s to 15 s. Now pushes are bounded (256 KiB
of metadata, 8 KiB of ``env_args``), the leaderboard is sorted and paged in SQL (the best 100), and a row
reads neither the metadata nor the summary (deferred columns; ``env_args`` has its own).

Figures, in one process (``fastapi.testclient``, SQLite in a temporary directory), medians of ``--views``:

* ``page``: ``GET /<owner>/<name>``, templates and database included (milliseconds), and its size;
* ``load every result whole``: the old page's core, on the same database in the same run — every result
  with its metadata and summary loaded, sorted in Python (milliseconds; a lower bound of the old page, which
  also rendered every summary into the HTML).

Each result carries ``--metadata-kib`` of extra metadata (within the new bound) and a 60 KB summary::

    .venv/bin/python bench/hub_leaderboard.py                      # 1,000 results, 5 views
    .venv/bin/python bench/hub_leaderboard.py --results 200 --views 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fastapi.testclient import TestClient  # noqa: E402
from sqlalchemy import select  # noqa: E402
from sqlalchemy.orm import undefer  # noqa: E402

from hub_server import Settings, create_app  # noqa: E402
from hub_server.db.models import Owner, Project, Release  # noqa: E402
from hub_server.db.records import EvalResult  # noqa: E402


def build(app_db: object, results: int, metadata_kib: int) -> None:
    """One project, one release and ``results`` results, each with big metadata and a big summary."""
    extra = {f"key{i}": "x" * 1000 for i in range(metadata_kib)}
    with app_db.write() as session:  # type: ignore[attr-defined]
        owner = Owner(name="alice", kind="user")
        session.add(owner)
        session.flush()
        project = Project(owner_id=owner.id, name="demo-env", normalized="demo-env", private=False,
                          quarantined=False)
        session.add(project)
        session.flush()
        release = Release(project_id=project.id, version="0.1.0", canonical_version="0.1", yanked=False)
        session.add(release)
        session.flush()
        for i in range(results):
            session.add(EvalResult(
                release_id=release.id, submitted_by_id=owner.id, by_publisher=False, artifact_verified=False,
                model=f"model-{i}", avg_reward=(i * 7919 % 1000) / 1000, std_reward=0.1, num_examples=100,
                rollouts_per_example=4, metrics={"correct": 0.5}, pass_at_k={"1": 0.5}, env_args={"n": i},
                run_metadata={"model": f"model-{i}", "env_args": {"n": i}, **extra}, summary="s" * 60_000))


def _load_all(app_db: object) -> None:
    """The old page's core: every result whole (metadata and summary), sorted in Python."""
    with app_db.read() as session:  # type: ignore[attr-defined]
        rows = list(session.scalars(select(EvalResult).options(undefer(EvalResult.run_metadata),
                                                               undefer(EvalResult.summary))))
        rows.sort(key=lambda r: (-r.avg_reward, r.id))
        _ = [(r.run_metadata.get("env_args"), len(r.summary)) for r in rows]


def _median_ms(call: Callable[[], object], views: int) -> float:
    call()  # warm caches
    times = []
    for _ in range(views):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=int, default=1000, help="pushed results on the page's project")
    parser.add_argument("--metadata-kib", type=int, default=100, help="extra metadata per result, KiB")
    parser.add_argument("--views", type=int, default=5, help="timed views per figure (the median is shown)")
    args = parser.parse_args(argv)
    if args.results < 1 or args.views < 1 or args.metadata_kib < 0:
        parser.error("--results and --views must be positive, --metadata-kib not negative")
    with tempfile.TemporaryDirectory(prefix="hub-leaderboard-") as tmp:
        app = create_app(Settings(data_dir=Path(tmp) / "hub"))
        db = app.state.hub.db
        build(db, args.results, args.metadata_kib)
        with TestClient(app) as client:
            size = len(client.get("/alice/demo-env").content)
            page = _median_ms(lambda: client.get("/alice/demo-env").raise_for_status(), args.views)
        old = _median_ms(lambda: _load_all(db), args.views)
        db.dispose()
    print(f"{args.results:,} results of {args.metadata_kib} KiB metadata + 60 KB summary each; "
          f"median of {args.views} views")
    print("| figure | ms | page size |")
    print("|---|---:|---:|")
    print(f"| environment page (the best 100, SQL-paged, metadata and summaries not loaded) | {page:.0f} | "
          f"{size / 1e3:.0f} KB |")
    print(f"| load every result whole and sort (the old page's core) | {old:.0f} | - |")
    print(f"ratio: {old / page:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
