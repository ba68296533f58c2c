"""The parts' import boundaries, ``[tool.importlinter]`` in pyproject.toml: every contract is kept."""

from __future__ import annotations

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
    """The checker reads the real imports: the CLIs do import the SDK, so forbidding it must fail, naming a line."""
    config = tmp_path / "contracts.toml"
    config.write_text(
        '[tool.importlinter]\nroot_packages = ["verifiers", "cli"]\n\n'
        '[[tool.importlinter.contracts]]\nname = "CLIs without the SDK"\ntype = "forbidden"\n'
        'source_modules = ["cli"]\nforbidden_modules = ["verifiers"]\n'
    )
    done = _lint_imports(str(config))
    assert done.returncode == 1, done.stdout[-2000:]
    assert "CLIs without the SDK BROKEN" in done.stdout and "cli.vf_eval -> verifiers" in done.stdout, done.stdout
