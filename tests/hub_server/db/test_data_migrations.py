"""Data migrations on databases made before them. 0009: releases re-keyed by PEP 440 version, a second
spelling of a version kept but yanked, every unchecked wheel of a checked release queued for its own check.
0010: each pushed result's env_args copied out of its metadata into a column of their own."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import sqlalchemy as sa

from hub_server.db import Database

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
RELEASE_COLUMNS = "id, project_id, version, canonical_version, yanked, yanked_reason, summary, description, " \
                  "description_content_type, keywords, created_at"


def _rows(c: sa.Connection, releases: tuple[tuple[int, str], ...]) -> None:
    """One owner, one project and these releases, as the schema before 0009 stored them."""
    c.execute(sa.text("INSERT INTO owners (id, name, kind, created_at) VALUES (1, 'alice', 'user', :t)"), {"t": NOW})
    c.execute(sa.text("INSERT INTO projects (id, owner_id, name, normalized, private, quarantined, created_at, "
                      "card_tags, refuse_failing_checks) VALUES (1, 1, 'demo', 'demo', 0, 0, :t, '', 0)"), {"t": NOW})
    for rid, version in releases:
        c.execute(sa.text(f"INSERT INTO releases ({RELEASE_COLUMNS}) VALUES (:id, 1, :v, :v, 0, '', '', '', '', '', "
                          ":t)"), {"id": rid, "v": version, "t": NOW})


def test_0009_yanks_duplicate_spellings_and_queues_added_wheels(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path}/hub.sqlite3")
    db.migrate("0008")
    with db.write_engine.begin() as c:
        _rows(c, ((1, "0.1.0"), (2, "0.1"), (3, "0.2")))
        files = ((1, 1, "demo-0.1.0-py3-none-any.whl"), (2, 1, "demo-0.1.0-1-py3-none-any.whl"),
                 (3, 2, "demo-0.1-py3-none-any.whl"), (4, 3, "demo-0.2-py3-none-any.whl"))
        for fid, rid, name in files:
            c.execute(sa.text("INSERT INTO files (id, release_id, filename, packagetype, size, sha256, blake2_256, "
                              "uploaded_at, uploaded_by_id) VALUES (:id, :r, :n, 'bdist_wheel', 1, :s, :s, :t, 1)"),
                      {"id": fid, "r": rid, "n": name, "s": f"{fid:064x}", "t": NOW})
        c.execute(sa.text("INSERT INTO server_checks (kind, release_id, file_id, status, summary, attempts, queued_at)"
                          " VALUES ('contract', 1, 1, 'passed', 'ok', 1, :t)"), {"t": NOW})
    db.migrate()
    with db.write_engine.connect() as c:
        releases = c.execute(sa.text("SELECT id, canonical_version, yanked, yanked_reason FROM releases "
                                     "ORDER BY id")).all()
        checks = c.execute(sa.text("SELECT file_id, status FROM server_checks ORDER BY file_id")).all()
    assert [(r[0], r[1], bool(r[2])) for r in releases] == [
        (1, "0.1", False), (2, "0.1#dup-2", True), (3, "0.2", False)]
    assert "another spelling" in releases[1][3]
    # the wheel added to the checked release is queued; releases never checked stay as they were
    assert checks == [(1, "passed"), (2, "queued")]
    db.dispose()


def test_0010_copies_env_args_out_of_the_metadata(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path}/hub.sqlite3")
    db.migrate("0009")
    with db.write_engine.begin() as c:
        _rows(c, ((1, "0.1"),))
        for rid, metadata in ((1, {"env_args": {"n": 3}}), (2, {"env_args": "not a dict"}), (3, {})):
            c.execute(sa.text("INSERT INTO eval_results (id, release_id, submitted_by_id, by_publisher, "
                              "artifact_verified, model, avg_reward, std_reward, num_examples, rollouts_per_example, "
                              "metrics, pass_at_k, run_metadata, summary, created_at) VALUES (:id, 1, 1, 0, 0, 'm', "
                              "0.5, 0.1, 1, 1, '{}', '{}', :meta, '', :t)"),
                      {"id": rid, "meta": json.dumps(metadata), "t": NOW})
    db.migrate()
    with db.write_engine.connect() as c:
        found = c.execute(sa.text("SELECT id, env_args FROM eval_results ORDER BY id")).all()
    assert [(i, json.loads(a)) for i, a in found] == [(1, {"n": 3}), (2, {}), (3, {})]
    db.dispose()
