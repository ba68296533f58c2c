"""The root conftest's rule: under CI=true a skip for a missing prerequisite fails; an ``n/a`` skip stays."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT_CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

TESTS = '''
import pytest

def test_missing_prerequisite():
    pytest.skip("needs .venv-vllm: bash scripts/setup_vllm_cpu.sh")

@pytest.mark.skipif(True, reason="needs tmux")
def test_marked_prerequisite():
    pass

def test_not_applicable():
    pytest.skip("n/a on SQLite: nothing to race")

@pytest.mark.xfail(reason="a known bug", strict=False)
def test_expected_failure():
    assert False

def test_passes():
    pass
'''


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(ROOT_CONFTEST.read_text())
    pytester.makepyfile(test_suite=TESTS)
    pytester.makepyfile(test_module_skip="import pytest\npytest.importorskip('no_such_module_anywhere')\n")
    return pytester


def test_in_ci_a_missing_prerequisite_fails_and_says_what_it_was(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    result = suite.runpytest_subprocess("-rA", "test_suite.py")
    result.assert_outcomes(passed=1, failed=1, errors=1, skipped=1, xfailed=1)  # a skipif fails its setup
    result.stdout.fnmatch_lines(["*CI=true: tests may not skip*needs .venv-vllm: bash scripts/setup_vllm_cpu.sh*"])
    # a module whose prerequisite does not import stops the run at collection, naming it
    collected = suite.runpytest_subprocess("test_module_skip.py")
    collected.assert_outcomes(errors=1)
    collected.stdout.fnmatch_lines(["*CI=true*could not import 'no_such_module_anywhere'*"])


def test_outside_ci_every_skip_is_a_skip(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    suite.runpytest_subprocess().assert_outcomes(passed=1, skipped=4, xfailed=1)


def test_ci_false_is_not_ci(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "false")
    suite.runpytest_subprocess().assert_outcomes(passed=1, skipped=4, xfailed=1)
