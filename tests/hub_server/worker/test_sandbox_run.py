"""One check in a real local sandbox: a sound wheel passes; a file that is no wheel, a check that hangs and a
sandbox that cannot start each end in a clear verdict, and nothing is left running."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hub_server.db.checks import ERROR, FAILED, PASSED
from hub_server.worker.sandbox_run import SandboxOutcome, run_check
from hub_server.worker.verdicts import contract_verdict
from tests.hub_server.worker.envs import env_wheel
from verifiers.sandboxes import AsyncSandboxClient

pytestmark = pytest.mark.slow


def _check(image: Path, wheel: Path, name: str, time_limit_s: float = 120) -> tuple[SandboxOutcome, str, str]:
    async def run() -> tuple[SandboxOutcome, list[object]]:
        async with AsyncSandboxClient() as client:
            outcome = await run_check(client, image, wheel, {"mode": "contract", "name": name, "num_examples": 3,
                                                             "rollouts_per_example": 1}, time_limit_s)
            return outcome, await client.list(labels=["hub-check"])

    outcome, left = asyncio.run(run())
    assert left == []  # the sandbox is deleted whatever happened in it
    status, summary, _report = contract_verdict(outcome, None, "test")
    return outcome, status, summary


def test_a_sound_wheel_passes_with_its_timings_and_sdk_version(check_image: Path, tmp_path: Path) -> None:
    outcome, status, summary = _check(check_image, env_wheel(tmp_path, "good", "good-env"), "good-env")
    assert status == PASSED, (summary, outcome.log_tail)
    assert outcome.report is not None and outcome.report["sdk_version"].startswith("0.3.0")
    assert [r["reward"] for r in outcome.report["rollouts"]] == [1.0, 1.0, 1.0]
    assert {"sandbox_s", "install_s", "run_s"} <= set(outcome.timings)


def test_a_package_that_forges_its_report_fails_in_a_real_sandbox(check_image: Path, tmp_path: Path) -> None:
    outcome, status, summary = _check(check_image, env_wheel(tmp_path, "forges", "forging-env"), "forging-env")
    assert status == FAILED and summary == "a forged report: it claims 3 rollouts, but the model was asked 0 times"
    assert outcome.report is not None and "nonce" not in outcome.report  # checked, then dropped


def test_a_file_that_is_not_a_wheel_fails_at_install(check_image: Path, tmp_path: Path) -> None:
    fake = tmp_path / "fake_env-0.1.0-py3-none-any.whl"
    fake.write_bytes(b"this is not a zip archive")
    _outcome, status, summary = _check(check_image, fake, "fake-env")
    assert status == FAILED and summary.startswith("install: pip could not install fake_env-0.1.0")


def test_a_check_that_hangs_is_stopped_at_its_time_limit(check_image: Path, tmp_path: Path) -> None:
    # A sound check takes ~2.5 s here (install ~0.7 s), so 8 s is ample for everything before the hang; the
    # hang is what runs into the limit: the install finished, the run (load_environment) did not.
    outcome, status, summary = _check(check_image, env_wheel(tmp_path, "hangs", "slow-env"), "slow-env",
                                      time_limit_s=8)
    assert status == FAILED and summary == "timeout: the check ran past its limit of 8 s"
    assert "install_s" in outcome.timings and "run_s" not in outcome.timings, outcome.timings


def test_a_sandbox_that_cannot_start_is_an_error_not_a_verdict_on_the_package(tmp_path: Path) -> None:
    _outcome, status, summary = _check(tmp_path / "no-such-image", env_wheel(tmp_path, "good", "good-env"), "good-env")
    assert status == ERROR and summary.startswith("sandbox: ")
