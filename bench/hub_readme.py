"""Hub README benchmark: an environment page whose README is 1 MB of ``[``, before and after rendering moved to upload.

Before, every view of ``/<owner>/<name>/versions/<v>`` parsed the whole description with
markdown-it to find the argument and metric tables, and rendered its first 512 Ki characters to
HTML (cached per worker for 64 READMEs, so a view that missed the cache paid both). That path is
reproduced here with the same calls (markdown-it parse of the whole text with tables on; render of
the first 512 Ki characters; nh3), so its cost is measured on the same machine in the same run.
After, the upload that creates a release renders once, bounded by the input cap and a CPU budget
(``hub_server/services/release_readme.py``), and a view reads the stored HTML back.

Figures, in one process (``fastapi.testclient``, SQLite + folder in a temporary directory):

* ``before``: the old per-view parse + render of the description (seconds, once: it is slow);
* ``upload``: the new once-per-release render of the same description (seconds);
* ``view``: the median of ``--views`` full page requests (``GET /<owner>/<name>/versions/<v>``,
  templates and database included) of the release uploaded with that README (milliseconds);
* the same three for the bundled ``environments/reverse_text`` README, for scale.

::

    .venv/bin/python bench/hub_readme.py                  # the 1 MB README (~40 s, most of it "before")
    .venv/bin/python bench/hub_readme.py --size 131072    # a smaller README, quicker
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the test helpers that make synthetic wheels

import nh3  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from markdown_it import MarkdownIt  # noqa: E402

from hub_server import Settings, create_app  # noqa: E402
from hub_server.services import accounts, release_readme  # noqa: E402
from hub_server.testing.dists import make_wheel, upload_form  # noqa: E402

OLD_RENDER_CHARS = 512 * 1024  # what the old per-view render cut the README to


@dataclass(frozen=True)
class Figures:
    """One README's costs: the old per-view path, the new upload-time render, and a view now."""

    label: str
    chars: int
    before_s: float
    upload_s: float
    view_ms: float


def _basic(token: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"__token__:{token}".encode()).decode()}


def old_view_path(description: str) -> float:
    """Seconds the old page spent on a README per view: the table parse of all of it, then the render."""
    start = time.perf_counter()
    MarkdownIt("commonmark").enable("table").parse(description)
    html = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(
        description[:OLD_RENDER_CHARS])
    nh3.clean(html)
    return time.perf_counter() - start


def new_upload_render(description: str) -> float:
    """Seconds the upload that creates a release now spends rendering its README."""
    start = time.perf_counter()
    release_readme.render(description, "text/markdown")
    return time.perf_counter() - start


def page_view_ms(description: str, views: int) -> float:
    """Median milliseconds of a full page request for a release uploaded with ``description``."""
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(Settings(data_dir=Path(tmp) / "hub"))
        hub = app.state.hub
        with hub.db.write() as session:
            _user, token = accounts.create_user(session, "alice", dt.timedelta(days=1))
        wheel = make_wheel(Path(tmp) / "dist", "bench-env", "0.1.0", description=description)
        with TestClient(app) as client:
            with open(wheel, "rb") as handle:
                answer = client.post("/legacy/", data=upload_form(wheel, "bench-env", "0.1.0"), headers=_basic(token),
                                     files={"content": (wheel.name, handle, "application/octet-stream")})
            answer.raise_for_status()
            times = []
            for _ in range(views):
                start = time.perf_counter()
                page = client.get("/alice/bench-env/versions/0.1.0")
                times.append((time.perf_counter() - start) * 1000)
                page.raise_for_status()
        hub.db.dispose()
    return statistics.median(times)


def measure(label: str, description: str, views: int) -> Figures:
    return Figures(label, len(description), old_view_path(description), new_upload_render(description),
                   page_view_ms(description, views))


def report(rows: list[Figures]) -> str:
    lines = ["| README | characters | before: per view (s) | now: once at upload (s) | now: per view (ms) |",
             "|---|---:|---:|---:|---:|"]
    lines += [f"| {r.label} | {r.chars:,} | {r.before_s:.2f} | {r.upload_s:.2f} | {r.view_ms:.1f} |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="Characters of '[' in the hostile README.")
    parser.add_argument("--views", type=int, default=20, help="Page requests per README (the median is shown).")
    args = parser.parse_args(argv)
    if args.size < 1 or args.views < 1:
        parser.error("--size and --views must be at least 1")
    normal = (ROOT / "environments" / "reverse_text" / "README.md").read_text()
    rows = [measure("environments/reverse_text", normal, args.views),
            measure(f"{args.size:,} x '['", "[" * args.size, args.views)]
    print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
