"""The linter over the whole tree, with the rules ``[tool.ruff]`` in pyproject.toml selects: no finding is allowed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUFF = Path(sys.executable).parent / "ruff"  # installed with the test extra


def test_ruff_finds_nothing() -> None:
    assert RUFF.is_file(), f"no ruff at {RUFF}: install the test extra (bash scripts/bootstrap.sh test)"
    done = subprocess.run([str(RUFF), "check", "--no-cache", "--output-format", "concise", "."], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_ruff_reads_the_projects_rules(tmp_path: Path) -> None:
    """A file with an unused import and a 121-column line fails: the config is the one in force, not defaults."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\nx = '" + "a" * 115 + "'\n")
    done = subprocess.run([str(RUFF), "check", "--no-cache", "--output-format", "concise",
                           "--config", str(ROOT / "pyproject.toml"), str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "F401" in done.stdout and "E501" in done.stdout, done.stdout
