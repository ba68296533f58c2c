"""Putting an instance's buggy repository into a sandbox, and running its tests there.

The sandbox is created with the instance's image (:mod:`swe.image`) at ``/image``: the buggy tree and a
compiled pytest, read-only. Both the environment and ``python -m swe validate`` use these functions, so the
rollout and the check of the reference fixes set up and grade the repository the same way.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from swe.testrun import parse_outcomes, passed, pytest_command
from verifiers.errors import SandboxError
from verifiers.sandboxes import AsyncSandboxClient, CommandResponse

REPO = "/workspace/repo"
IMAGE_REPO = "/image/repo"  # the buggy tree as built: the copy's source, and the grader's test files
PYTEST_DIR = "/image/pytest"  # on PYTHONPATH; read-only, so the grader runs the pytest the image holds
_STAGING = "/tmp/.swe-setup"
_COPY = f"cp --parents --remove-destination -t {REPO} --"  # paths relative to IMAGE_REPO, kept under REPO


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


def _test_files(test_ids: list[str]) -> list[str]:
    return sorted({test_id.split("::", 1)[0] for test_id in test_ids})


async def run_instance_tests(client: AsyncSandboxClient, sandbox_id: str, instance: dict[str, Any],
                             timeout: float) -> TestResult:
    """Run FAIL_TO_PASS + PASS_TO_PASS in the repository as the model left it, with pristine test files.

    The listed test modules and every ``conftest.py`` are copied back from the image first (the bug never
    touches them), and pytest is the image's read-only copy, so neither editing the tests nor breaking a
    pytest can change the grade. A run past ``timeout`` (a bug fixed into an endless loop) passes nothing.
    """
    fail_ids, pass_ids = instance["FAIL_TO_PASS"], instance["PASS_TO_PASS"]
    restore = " ".join(shlex.quote(path) for path in _test_files(fail_ids + pass_ids))
    await _checked(client, sandbox_id,
                   # writable again and replaced, not written through: a read-only file or a link left by
                   # the model must not turn its rollout into a sandbox failure or redirect the copy
                   f"mkdir -p {REPO} && chmod -R u+rwX {REPO} && cd {IMAGE_REPO} && {_COPY} {restore}"
                   f" && find . -name conftest.py -exec {_COPY} {{}} +", "restore the test files")
    response = await client.execute_command(
        sandbox_id, pytest_command(fail_ids + pass_ids), working_dir=REPO, timeout=timeout, raise_on_timeout=False,
        env={"PYTHONPATH": PYTEST_DIR, "PYTHONDONTWRITEBYTECODE": "1"})
    if response.oom_killed:
        return TestResult([False] * len(fail_ids), [False] * len(pass_ids))
    outcomes = parse_outcomes(response.stdout)
    return TestResult(passed(outcomes, fail_ids), passed(outcomes, pass_ids), timed_out=response.timed_out)
