"""``vf-hub`` in a venv without the Hub's dependencies: one line naming the install command, exit 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _vf_hub(*args: str, hide: str | None = None) -> subprocess.CompletedProcess[str]:
    """``vf-hub ARGS`` through its console-script entry, with ``hide`` made unimportable (``sys.modules[m] = None``)."""
    hiding = f"sys.modules[{hide!r}] = None\n" if hide else ""
    code = (f"import sys\n{hiding}sys.argv = ['vf-hub', *{list(args)!r}]\n"
            "from hub_server.cli.hub_entry import main\nmain()\n")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("missing", ["fastapi", "pydantic_settings", "sqlalchemy"])
def test_without_the_hubs_dependencies_vf_hub_names_the_distribution_to_install(missing: str) -> None:
    """``hub_server`` itself loads without them (its ``Settings``/``create_app`` are loaded on first use)."""
    done = _vf_hub("--help", hide=missing)
    assert done.returncode == 2, done.stderr
    assert "pip install -e distributions/hub" in done.stderr and "pip install verifiers-hub" in done.stderr
    assert f"{missing!r}" in done.stderr and "Traceback" not in done.stderr


def test_with_the_extra_it_is_vf_hub() -> None:
    done = _vf_hub("--help")
    assert done.returncode == 0, done.stderr
    assert "serve" in done.stdout and "install" in done.stdout


def test_a_missing_module_of_this_project_is_not_blamed_on_the_extra() -> None:
    done = _vf_hub("--help", hide="hub_server.client")
    assert done.returncode == 1 and "ModuleNotFoundError" in done.stderr and "pip install" not in done.stderr
