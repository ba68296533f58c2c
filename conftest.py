"""Suite-wide rule (tests/ and environments/*/tests alike): under ``CI=true`` a test may not skip.

Locally a missing prerequisite (the vLLM venv, Chromium, tmux, an original release's venv) skips its
tests with the command that installs it. In CI everything is installed by the project's own scripts,
so the same skip would hide a broken set-up: there it fails, naming what was missing. A skip that is
by design, where the test cannot apply to this configuration at all (another platform, not root,
the storage backend of the other pass), gives a reason starting with ``n/a`` and stays a skip.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

NOT_APPLICABLE = "n/a"


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def _skip_reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    longrepr: Any = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def _fail_a_skip_in_ci(report: pytest.CollectReport | pytest.TestReport) -> None:
    if not (_in_ci() and report.skipped) or hasattr(report, "wasxfail"):
        return
    reason = _skip_reason(report)
    if reason.startswith(NOT_APPLICABLE):
        return
    report.outcome = "failed"
    report.longrepr = f"CI=true: tests may not skip for a missing prerequisite; this one said: {reason}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    _fail_a_skip_in_ci(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    # A module-level importorskip skips the whole file at collection, before any test report exists.
    report = yield
    _fail_a_skip_in_ci(report)
    return report
