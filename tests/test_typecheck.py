"""The type checker over the source packages, with ``[tool.mypy]`` in pyproject.toml: no finding is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mypy_run import result, run

# A first run reads every package the code imports (torch, transformers, openai, ...): about a minute. In a
# session that has test_mypy_finds_nothing, that run starts at collection's end (tests/mypy_run.py says how).
pytestmark = pytest.mark.slow


def test_mypy_finds_nothing() -> None:
    """The packages named in the config, checked; its incremental cache (.mypy_cache) makes a rerun take seconds."""
    done = result()
    findings = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert done.returncode == 0, "\n".join(findings)[-8000:] + "\n" + done.stdout[-400:] + done.stderr[-2000:]
    assert "Success" in done.stdout, done.stdout


def test_mypy_reads_the_projects_config(tmp_path: Path) -> None:
    """Python 3.10 and the pydantic plugin are in force, not mypy's defaults."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import tomllib\n"  # the standard library has it from 3.11 only
        "\n"
        "from pydantic import BaseModel\n"
        "\n"
        "\n"
        "class Settings(BaseModel):\n"
        "    name: str\n"
        "\n"
        "\n"
        "Settings.model_construct(nme='a')\n"  # mypy alone says name is missing; the plugin names the misspelling
    )
    done = run("--no-incremental", str(bad), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert 'bad.py:1: error: Cannot find implementation or library stub for module named "tomllib"' in done.stdout
    assert 'bad.py:10: error: Unexpected keyword argument "nme" for "model_construct"' in done.stdout, done.stdout
