"""Putting an instance's buggy repository into a sandbox, and running its tests there.

The sandbox is created with the instance's image (:mod:`swe.image`) at ``/image``: the buggy tree and a
compiled pytest, read-only. Both the environment and ``python -m swe validate`` use these functions, so the
rollout and the check of the reference fixes set up and grade the repository the same way.
"""

from __future__ import annotations

import functools
import io
import shlex
import tarfile
from dataclasses import dataclass, field
from typing import Any

from swe.instances import repo_archive
from swe.testrun import PYTEST_ARGS, parse_outcomes, passed
from verifiers.errors import SandboxError
from verifiers.sandboxes import AsyncSandboxClient, CommandResponse

REPO = "/workspace/repo"
IMAGE_REPO = "/image/repo"  # the buggy tree as built: the copy's source, and the grader's test files
PYTEST_DIR = "/image/pytest"  # on PYTHONPATH; read-only, so the grader runs the pytest the image holds
GRADE_REPO = "/tmp/.swe-grade"  # rebuilt from IMAGE_REPO for every grading run
_STAGING = "/tmp/.swe-setup"
# Files Python or pytest would run without being asked: never taken from the model's tree.
_IMPLICIT = ("conftest.py", "pytest.py", "sitecustomize.py", "usercustomize.py", "test_*.py", "*_test.py")
_CONFIGS = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")  # pytest's order
# pytest with nothing but the image's pytest and the graded tree on sys.path (-I: no PYTHON* variables, no
# user site, not the working directory); the argv's first two words are those two directories.
_LAUNCH = "import sys; sys.path[:0] = sys.argv[1:3]; del sys.argv[1:3]; import pytest; sys.exit(pytest.main())"


@dataclass
class TestResult:
    """How the listed tests fared in one run."""

    fail_to_pass: list[bool] = field(default_factory=list)
    pass_to_pass: list[bool] = field(default_factory=list)
    timed_out: bool = False

    @property
    def resolved(self) -> bool:
        return not self.timed_out and all(self.fail_to_pass) and all(self.pass_to_pass)

    def as_dict(self) -> dict[str, Any]:
        return {"fail_to_pass": self.fail_to_pass, "pass_to_pass": self.pass_to_pass, "timed_out": self.timed_out,
                "resolved": self.resolved}


async def _checked(client: AsyncSandboxClient, sandbox_id: str, command: str, what: str,
                   timeout: float = 120) -> CommandResponse:
    """Run a setup command; one that fails is the sandbox's failure, not the model's."""
    response = await client.execute_command(sandbox_id, command, timeout=timeout)
    if response.exit_code != 0:
        detail = (response.stderr or response.stdout)[-500:]
        raise SandboxError(f"could not {what} (exit {response.exit_code}): {detail}")
    return response


async def prepare_repository(client: AsyncSandboxClient, sandbox_id: str) -> None:
    """Copy the image's buggy tree to ``REPO``, where the model works on it."""
    await _checked(client, sandbox_id, f"cp -R {IMAGE_REPO} {REPO}", "set up the repository")


async def apply_patch(client: AsyncSandboxClient, sandbox_id: str, patch: str) -> None:
    """Apply a ``patch -p1`` diff to the repository (the reference fix, for validation)."""
    await client.upload_bytes(sandbox_id, f"{_STAGING}/fix.patch", patch.encode())
    await _checked(client, sandbox_id,
                   f"patch -p1 --quiet --no-backup-if-mismatch -d {REPO} < {_STAGING}/fix.patch", "apply the patch")


@dataclass(frozen=True)
class Layout:
    """What of a project's pristine tree grading needs: its packages and its pytest settings file."""

    packages: tuple[str, ...]  # top-level directories holding an __init__.py: the library the model may change
    config: str | None  # the first pytest settings file at the top, as pytest would look for it


@functools.cache
def project_layout(project: str) -> Layout:
    """The layout of ``project``'s pristine tree (read from its archive)."""
    with tarfile.open(fileobj=io.BytesIO(repo_archive(project)), mode="r:gz") as tar:
        names = set(tar.getnames())
    packages = tuple(sorted(name.split("/")[0] for name in names
                            if name.count("/") == 1 and name.endswith("/__init__.py")))
    return Layout(packages, next((name for name in _CONFIGS if name in names), None))


def grading_tree_command(layout: Layout) -> str:
    """Shell command: a fresh ``GRADE_REPO`` from the image, with the model's library ``.py`` files copied in.

    Only regular ``.py`` files under the packages travel, never those named in ``_IMPLICIT``, nothing under a
    ``tests`` directory, no links, settings, ``.pth`` or bytecode: test files, conftests and settings stay
    the image's, and nothing the model adds is imported unless the library imports it. Files the model
    deleted stay as in the image.
    """
    inside = " -o ".join(f"-path ./{shlex.quote(package)}/\\*" for package in layout.packages) or "-false"
    skip = " ".join(f"! -name {shlex.quote(name)}" for name in _IMPLICIT)
    return (f"rm -rf {GRADE_REPO} && cp -R {IMAGE_REPO} {GRADE_REPO} && mkdir -p {REPO}"
            # readable again: a file the model locked must not turn its rollout into a sandbox failure
            f" && chmod -R u+rwX {REPO} && cd {REPO} && find . \\( -name tests -o -name __pycache__ \\) -prune"
            f" -o -type f -name \\*.py \\( {inside} \\) {skip}"
            f" -exec cp --parents --remove-destination -t {GRADE_REPO} -- {{}} +")


def grading_pytest_command(layout: Layout, test_ids: list[str]) -> str:
    """Shell command: the image's pytest on ``test_ids`` in ``GRADE_REPO``, isolated from the workspace.

    An explicit environment and ``python3 -I`` keep the sandbox's variables, the user site (``.pth``,
    ``usercustomize``) and the working directory off ``sys.path``; ``-c`` names the pristine settings
    (or none), so no ``pytest.ini`` above the tree is read, and ``--confcutdir`` stops conftests there.
    """
    config = f"{GRADE_REPO}/{layout.config}" if layout.config else "/dev/null"
    env = f"env -i PATH=/usr/bin:/bin LANG=C.UTF-8 HOME={GRADE_REPO} PYTHONDONTWRITEBYTECODE=1 " \
          "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1"
    return " ".join([env, "python3", "-I", "-c", shlex.quote(_LAUNCH), PYTEST_DIR, GRADE_REPO, "-c", config,
                     "--rootdir", GRADE_REPO, "--confcutdir", GRADE_REPO, *PYTEST_ARGS, "--",
                     *map(shlex.quote, test_ids)])


async def run_instance_tests(client: AsyncSandboxClient, sandbox_id: str, instance: dict[str, Any],
                             timeout: float) -> TestResult:
    """Run FAIL_TO_PASS + PASS_TO_PASS on the model's library code, in a tree and a Python it cannot reach.

    The tests run in a fresh copy of the image's tree holding only the model's changes to the library's
    ``.py`` files (:func:`grading_tree_command`), with the image's read-only pytest, its settings and
    nothing else on ``sys.path`` (:func:`grading_pytest_command`): editing tests, adding conftests, a
    ``pytest.py``, settings, ``.pth`` or ``*customize`` files cannot change the grade, and the workspace is
    left as the model left it. A run past ``timeout`` (a bug fixed into an endless loop) passes nothing.
    """
    fail_ids, pass_ids = instance["FAIL_TO_PASS"], instance["PASS_TO_PASS"]
    layout = project_layout(instance["project"])
    await _checked(client, sandbox_id, grading_tree_command(layout), "build the grading tree")
    response = await client.execute_command(
        sandbox_id, grading_pytest_command(layout, fail_ids + pass_ids), working_dir=GRADE_REPO, timeout=timeout,
        raise_on_timeout=False)
    if response.oom_killed:
        return TestResult([False] * len(fail_ids), [False] * len(pass_ids))
    outcomes = parse_outcomes(response.stdout)
    return TestResult(passed(outcomes, fail_ids), passed(outcomes, pass_ids), timed_out=response.timed_out)
