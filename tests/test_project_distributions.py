"""The project's three distributions, as their wheels say: the SDK (``verifiers``), the Hub (``verifiers-hub``)
and the trainer (``verifiers-trainer``) each ship one top-level package and their own console scripts, at one
version, and the two others require the SDK of that very build.

An environment package asks for ``verifiers``: what that wheel holds is all it installs (issue 13).
"""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.fresh_venv import DISTRIBUTIONS, build_wheel
from verifiers.version import __version__

# part -> (distribution name, its one top-level package, its console scripts -> entry point)
EXPECTED = {
    "sdk": ("verifiers", "verifiers", {
        "vf-eval": "verifiers.cli.vf_eval:main", "vf-init": "verifiers.cli.vf_init:main",
        "vf-scripted-server": "verifiers.cli.vf_scripted_server:main", "vf-tui": "verifiers.cli.vf_tui:main",
    }),
    "hub": ("verifiers-hub", "hub_server", {"vf-hub": "hub_server.cli.hub_entry:main"}),
    "trainer": ("verifiers-trainer", "trainer_adapter", {"vf-train": "trainer_adapter.cli.vf_train:main"}),
}

@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, zipfile.ZipFile]:
    out = tmp_path_factory.mktemp("wheels")
    return {part: zipfile.ZipFile(build_wheel(folder, out / part)) for part, folder in DISTRIBUTIONS.items()}


def _dist_info(wheel: zipfile.ZipFile, name: str) -> str:
    [folder] = {n.split("/", 1)[0] for n in wheel.namelist() if n.split("/", 1)[0].endswith(".dist-info")}
    return wheel.read(f"{folder}/{name}").decode()


def _metadata(wheel: zipfile.ZipFile) -> dict[str, list[str]]:
    message = Parser().parsestr(_dist_info(wheel, "METADATA"))
    return {key: message.get_all(key) or [] for key in ("Name", "Version", "Requires-Dist")}


@pytest.mark.parametrize("part", sorted(EXPECTED))
def test_each_wheel_ships_its_own_package_only(part: str, wheels: dict[str, zipfile.ZipFile]) -> None:
    """No other part's code, no ``cli`` package, no tests: every file is under the one package or the metadata."""
    tops = {n.split("/", 1)[0] for n in wheels[part].namelist() if not n.split("/", 1)[0].endswith(".dist-info")}
    assert tops == {EXPECTED[part][1]}, tops
    assert not [n for n in wheels[part].namelist() if "__pycache__" in n or n.endswith(".pyc")]


def test_each_wheel_ships_every_file_of_its_package(wheels: dict[str, zipfile.ZipFile]) -> None:
    """The Hub's templates, static files and migrations, too: force-include copies the folder, data files and all."""
    names = set(wheels["hub"].namelist())
    for needed in ("hub_server/templates/base.html", "hub_server/static/hub.css", "hub_server/migrations/env.py",
                   "hub_server/cli/hub_entry.py"):
        assert needed in names, needed
    assert "trainer_adapter/cli/vf_train.py" in wheels["trainer"].namelist()
    assert "verifiers/cli/vf_eval.py" in wheels["sdk"].namelist()


@pytest.mark.parametrize("part", sorted(EXPECTED))
def test_each_wheel_has_its_own_console_scripts(part: str, wheels: dict[str, zipfile.ZipFile]) -> None:
    entry_points = configparser.ConfigParser()
    entry_points.read_string(_dist_info(wheels[part], "entry_points.txt"))
    assert dict(entry_points["console_scripts"]) == EXPECTED[part][2]


def test_the_three_share_the_sdks_version_and_the_others_require_that_sdk(wheels: dict[str, zipfile.ZipFile]) -> None:
    metadata = {part: _metadata(wheel) for part, wheel in wheels.items()}
    assert {part: m["Name"] for part, m in metadata.items()} == {p: [e[0]] for p, e in EXPECTED.items()}
    assert {part: m["Version"] for part, m in metadata.items()} == {part: [__version__] for part in EXPECTED}
    for part in ("hub", "trainer"):
        [sdk] = [r for r in map(Requirement, metadata[part]["Requires-Dist"]) if r.name == "verifiers"]
        # the SDK of this build, local label included: a `verifiers` from a registry never satisfies it
        assert sdk.specifier.contains(__version__) and str(sdk.specifier) == f"=={__version__}", (part, sdk)
    assert not [r for r in metadata["sdk"]["Requires-Dist"] if Requirement(r).name.startswith("verifiers")]


def test_the_sdk_no_longer_has_the_parts_extras(wheels: dict[str, zipfile.ZipFile]) -> None:
    """``verifiers[hub]``, ``[train]`` and ``[inference]`` are gone: the parts are installed by name."""
    extras = set(Parser().parsestr(_dist_info(wheels["sdk"], "METADATA")).get_all("Provides-Extra") or [])
    assert not extras & {"hub", "train", "inference"}, extras
    assert {"math", "tui", "kube", "metrics", "test"} <= extras, extras


def test_the_editable_installs_run_the_checkouts_code(tmp_path_factory: pytest.TempPathFactory) -> None:
    # scripts/bootstrap.sh installs the Hub's and the trainer's distributions editable: what vf-hub and vf-train
    # import must be the checkout's files, not a copy in site-packages that an edit would not reach.
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", "import hub_server, trainer_adapter; print(hub_server.__file__); "
         "print(trainer_adapter.__file__)"],
        cwd=tmp_path_factory.mktemp("elsewhere"), env=env, capture_output=True, text=True, check=True)
    for line in done.stdout.split():
        assert Path(line).resolve().is_relative_to(root), f"{line} is not the checkout's ({root})"
