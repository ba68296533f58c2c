"""``vf-hub`` in a venv without the Hub's extra: one line naming the install command, exit 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _vf_hub(*args: str, hide: str | None = None) -> subprocess.CompletedProcess[str]:
    """``vf-hub ARGS`` through its console-script entry, with ``hide`` made unimportable (``sys.modules[m] = None``)."""
    hiding = f"sys.modules[{hide!r}] = None\n" if hide else ""
    code = f"import sys\n{hiding}sys.argv = ['vf-hub', *{list(args)!r}]\nfrom cli.hub_entry import main\nmain()\n"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_without_fastapi_vf_hub_names_the_extra_to_install() -> None:
    done = _vf_hub("--help", hide="fastapi")
    assert done.returncode == 2, done.stderr
    assert "pip install -e '.[hub]'" in done.stderr and "'fastapi'" in done.stderr
    assert "Traceback" not in done.stderr


def test_with_the_extra_it_is_vf_hub() -> None:
    done = _vf_hub("--help")
    assert done.returncode == 0, done.stderr
    assert "serve" in done.stdout and "install" in done.stdout


def test_a_missing_module_of_this_project_is_not_blamed_on_the_extra() -> None:
    done = _vf_hub("--help", hide="hub_server.client")
    assert done.returncode == 1 and "ModuleNotFoundError" in done.stderr and "pip install" not in done.stderr
