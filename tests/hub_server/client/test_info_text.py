"""vf-hub info's text: what a person reads, with the Hub's values made safe for a terminal."""

from __future__ import annotations

from hub_server.client.info_text import info_text, shown


def _project(**changes: object) -> dict:
    project = {
        "owner": "alice", "name": "demo-env", "private": False, "summary": "Reverse text", "latest": "0.2.0",
        "index_url": "http://hub/alice/simple/", "description": "# Demo\n\nline\n",
        "install": {"uv": "uv pip install demo-env==0.2.0", "pip": "pip install 'demo-env @ http://hub/f.whl'"},
        "versions": [
            {"version": "0.1.0", "created_at": "2026-11-01T10:00:00", "yanked": True, "yanked_reason": "broken",
             "requires_python": ">=3.10", "files": [{"size": 1500}]},
            {"version": "0.2.0", "created_at": "2026-11-02T10:00:00", "yanked": False, "yanked_reason": "",
             "requires_python": None, "files": [{"size": 900}, {"size": 2_500_000}]},
        ],
    }
    return {**project, **changes}


def test_the_text_names_what_a_user_needs_newest_version_first() -> None:
    lines = info_text(_project(), "http://hub/").splitlines()
    assert lines[:4] == ["alice/demo-env", "  Reverse text", "latest:  0.2.0", "page:    http://hub/alice/demo-env"]
    assert "install (pip): pip install 'demo-env @ http://hub/f.whl'" in lines
    assert "README:  3 lines (on the page; vf-hub info --json has it)" in lines
    assert lines[-3:] == ["versions (2):", "  0.2.0  2026-11-02  2 files, 2.5 MB",
                          "  0.1.0  2026-11-01  1 file, 1.5 KB  Python >=3.10  YANKED: broken"]
    assert "# Demo" not in "\n".join(lines)  # the README itself is the page's


def test_a_project_with_nothing_installable_says_so() -> None:
    text = info_text(_project(latest=None, install={}, versions=[], description="", private=True), "http://hub")
    assert text.splitlines()[0] == "alice/demo-env  (private)"
    assert "latest:  - (no version installable" in text and "versions (0):" in text and "install (" not in text


def test_hostile_values_cannot_drive_the_terminal() -> None:
    text = info_text(_project(summary="ok\x1b[2J\x1b]0;pwned\x07\nnext line", name="x\rdemo"), "http://hub")
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    assert "  ok\\x1b[2J\\x1b]0;pwned\\x07\\nnext line" in text
    assert len(shown("a" * 10_000)) == 300 and shown("a" * 10_000).endswith("…")
