"""The parts' import boundaries, ``[tool.importlinter]`` in pyproject.toml: every contract is kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"  # installed with the test extra


def _lint_imports(*args: str) -> subprocess.CompletedProcess[str]:
    assert LINT_IMPORTS.is_file(), f"no lint-imports at {LINT_IMPORTS}: scripts/bootstrap.sh test installs it"
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_every_import_contract_is_kept() -> None:
    done = _lint_imports()
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert "0 broken" in done.stdout and f"{len(contracts)} kept" in done.stdout, done.stdout[-2000:]


def test_a_contract_the_code_breaks_is_reported(tmp_path: Path) -> None:
    """The checker reads the real imports: vf-eval does import the SDK's errors, so forbidding them must fail,
    naming the line."""
    config = tmp_path / "contracts.toml"
    config.write_text(
        '[tool.importlinter]\nroot_packages = ["verifiers"]\n\n'
        '[[tool.importlinter.contracts]]\nname = "CLIs without the SDK\'s errors"\ntype = "forbidden"\n'
        'source_modules = ["verifiers.cli"]\nforbidden_modules = ["verifiers.errors"]\n'
    )
    done = _lint_imports(str(config))
    assert done.returncode == 1, done.stdout[-2000:]
    assert "CLIs without the SDK's errors BROKEN" in done.stdout, done.stdout
    assert "verifiers.cli.vf_eval -> verifiers.errors" in done.stdout, done.stdout


def test_a_cli_module_imported_by_library_code_is_reported(tmp_path: Path) -> None:
    """The protected contract reads the real graph too: no library code may import vf-eval's module, which here
    a one-line package beside the SDK does (a CLI module's siblings may: vf_hub imports hub_options)."""
    (tmp_path / "trainer_user").mkdir()
    (tmp_path / "trainer_user" / "__init__.py").write_text("import verifiers.cli.vf_eval\n")
    config = tmp_path / "contracts.toml"
    config.write_text(
        '[tool.importlinter]\nroot_packages = ["verifiers", "trainer_user"]\n\n'
        '[[tool.importlinter.contracts]]\nname = "CLI modules are entry points"\ntype = "protected"\n'
        'protected_modules = ["verifiers.cli"]\nallowed_importers = []\n'
    )
    done = subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", str(config)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "CLI modules are entry points BROKEN" in done.stdout, done.stdout
    assert "trainer_user -> verifiers.cli.vf_eval" in done.stdout, done.stdout


def test_benchmarks_import_nothing_from_the_tests() -> None:
    """bench/ runs from a deployment's checkout too, where tests/ may not be: its fixtures come from the parts'
    own testing packages (verifiers.testing, hub_server.testing)."""
    import ast

    offenders = []
    for script in sorted((ROOT / "bench").rglob("*.py")):
        for node in ast.walk(ast.parse(script.read_text(), str(script))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offenders += [f"{script.relative_to(ROOT)}: {n}" for n in names if n == "tests" or n.startswith("tests.")]
    assert not offenders, offenders
