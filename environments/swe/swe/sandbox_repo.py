"""Putting an instance's buggy repository into a sandbox, and running its tests there.

Both the environment and ``python -m swe validate`` use these, so the rollout and the check of the
reference fixes set up and grade the repository the same way.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from swe.instances import repo_archive
from swe.pytest_bundle import pytest_archive
from swe.testrun import parse_outcomes, passed, pytest_command
from verifiers.errors import SandboxError
from verifiers.sandboxes import AsyncSandboxClient, CommandResponse

REPO = "/workspace/repo"
PYTEST_DIR = "/tmp/swe-pytest"  # on PYTHONPATH for the model's commands (outside the repository)
_STAGING = "/tmp/.swe-setup"
_GRADER = "/tmp/.swe-grader"  # fresh copies at grading time: whatever the model did to the others


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


async def prepare_repository(client: AsyncSandboxClient, sandbox_id: str, instance: dict[str, Any]) -> None:
    """Extract the pristine tree at ``REPO``, apply the instance's bug, and unpack pytest at ``PYTEST_DIR``."""
    await client.upload_bytes(sandbox_id, f"{_STAGING}/repo.tar.gz", repo_archive(instance["project"]))
    await client.upload_bytes(sandbox_id, f"{_STAGING}/pytest.tar.gz", pytest_archive())
    await client.upload_bytes(sandbox_id, f"{_STAGING}/bug.patch", instance["bug_patch"].encode())
    await _checked(client, sandbox_id,
                   f"mkdir -p {REPO} {PYTEST_DIR} && tar -xzf {_STAGING}/repo.tar.gz -C {REPO}"
                   f" && tar -xzf {_STAGING}/pytest.tar.gz -C {PYTEST_DIR}"
                   f" && patch -p1 --quiet --no-backup-if-mismatch -d {REPO} < {_STAGING}/bug.patch"
                   f" && rm -rf {_STAGING}", "set up the repository")


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

    The listed test modules and every ``conftest.py`` are put back from the pristine tree first, and a
    fresh pytest is unpacked, so neither editing the tests nor breaking the model's pytest copy can
    change the grade. A run past ``timeout`` (a bug fixed into an endless loop) passes nothing.
    """
    fail_ids, pass_ids = instance["FAIL_TO_PASS"], instance["PASS_TO_PASS"]
    await client.upload_bytes(sandbox_id, f"{_GRADER}/repo.tar.gz", repo_archive(instance["project"]))
    await client.upload_bytes(sandbox_id, f"{_GRADER}/pytest.tar.gz", pytest_archive())
    restore = " ".join(shlex.quote(path) for path in _test_files(fail_ids + pass_ids))
    await _checked(client, sandbox_id,
                   f"mkdir -p {_GRADER}/pytest && tar -xzf {_GRADER}/pytest.tar.gz -C {_GRADER}/pytest"
                   f" && mkdir -p {REPO} && tar -xzf {_GRADER}/repo.tar.gz -C {REPO} {restore}"
                   f" && (tar -tzf {_GRADER}/repo.tar.gz | grep 'conftest\\.py$' | xargs -r tar -xzf"
                   f" {_GRADER}/repo.tar.gz -C {REPO})", "restore the test files")
    response = await client.execute_command(
        sandbox_id, pytest_command(fail_ids + pass_ids), working_dir=REPO, timeout=timeout, raise_on_timeout=False,
        env={"PYTHONPATH": f"{_GRADER}/pytest", "PYTHONDONTWRITEBYTECODE": "1"})
    if response.oom_killed:
        return TestResult([False] * len(fail_ids), [False] * len(pass_ids))
    outcomes = parse_outcomes(response.stdout)
    return TestResult(passed(outcomes, fail_ids), passed(outcomes, pass_ids), timed_out=response.timed_out)
