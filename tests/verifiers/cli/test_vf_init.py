"""Tests for ``vf-init``: the CLI writes a package whose own tests pass straight away."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from verifiers.cli.vf_init import app

REPO_ROOT = Path(__file__).resolve().parents[3]


def _env(extra_path: Path | None = None) -> dict[str, str]:
    paths = [str(p) for p in (extra_path, REPO_ROOT) if p is not None]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])}


def _vf_init(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "verifiers.cli.vf_init", *args], cwd=cwd, env=_env(), capture_output=True, text=True
    )


def test_creates_package_under_default_path(tmp_path: Path) -> None:
    result = _vf_init("my-env", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    root = tmp_path / "environments" / "my_env"
    assert (root / "my_env.py").is_file() and (root / "pyproject.toml").is_file()
    assert "vf-eval my-env" in result.stdout


def test_path_and_multi_file_options(tmp_path: Path) -> None:
    result = _vf_init("my-env", "-p", "pkgs", "--multi-file", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "pkgs" / "my_env" / "my_env" / "__init__.py").is_file()


@pytest.mark.parametrize("name", ["", "my env", "1env", "a/b", "x-", "class", "json"])
def test_bad_name_exits_nonzero_without_traceback(tmp_path: Path, name: str) -> None:
    result = CliRunner().invoke(app, [name, "--path", str(tmp_path)])
    assert result.exit_code == 2
    assert "vf-init: error:" in result.output
    assert "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []


def test_bad_name_in_a_real_process_prints_one_clear_line(tmp_path: Path) -> None:
    result = _vf_init("my env", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().startswith("vf-init: error:") and "whitespace" in result.stderr
    assert "Traceback" not in result.stderr


def test_existing_package_is_left_alone_unless_rewriting_readme(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["my-env", "-p", str(tmp_path)]).exit_code == 0
    module = tmp_path / "my_env" / "my_env.py"
    module.write_text("# mine\n")
    (tmp_path / "my_env" / "README.md").write_text("old\n")

    again = runner.invoke(app, ["my-env", "-p", str(tmp_path)])
    assert again.exit_code == 2 and "already exists" in again.output
    assert (tmp_path / "my_env" / "README.md").read_text() == "old\n"

    rewrite = runner.invoke(app, ["my-env", "-p", str(tmp_path), "--rewrite-readme"])
    assert rewrite.exit_code == 0, rewrite.output
    assert "### Quickstart" in (tmp_path / "my_env" / "README.md").read_text()
    assert module.read_text() == "# mine\n"


@pytest.mark.slow
@pytest.mark.parametrize("multi_file", [False, True])
def test_generated_package_tests_pass(tmp_path: Path, multi_file: bool) -> None:
    args = ["fresh-env", "-p", "envs"] + (["--multi-file"] if multi_file else [])
    assert _vf_init(*args, cwd=tmp_path).returncode == 0
    root = tmp_path / "envs" / "fresh_env"
    # Run the package's tests as its author would, with the package importable (no install needed).
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider"],
        cwd=root,
        env=_env(extra_path=root),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


@pytest.mark.slow
def test_the_printed_next_steps_pass_from_a_project_whose_pytest_settings_need_a_missing_plugin(
    tmp_path: Path,
) -> None:
    # A newcomer's checkout: the project's pytest settings name pytest-asyncio's option; in the main job's venv
    # that plugin is absent (simulated by -p no:asyncio), which used to warn "Unknown config option".
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nasyncio_mode = "auto"\n')
    made = _vf_init("next-env", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    steps = made.stdout.split("Next steps:")[1].strip().splitlines()
    assert steps[0].strip().startswith("pip install -e '") and steps[0].strip().endswith("[test]'")
    pytest_line = steps[1].split()
    assert pytest_line[:3] == ["python", "-m", "pytest"], steps
    result = subprocess.run(
        [sys.executable, *pytest_line[1:], "-q", "-p", "no:cacheprovider", "-p", "no:asyncio", "-W", "error"],
        cwd=tmp_path, env=_env(),  # the package is not installed: its own pytest settings make it importable
        capture_output=True, text=True, timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout and "Unknown config option" not in result.stdout + result.stderr
