"""The grader cannot be gamed: rollouts that leave the bug and plant something pytest or Python loads implicitly.

Each hack below made the grading run report the listed tests as passed before grading moved to a fresh tree
(see ``swe.sandbox_repo``); every one now scores 0. Honest fixes, wherever in the package they are made, still
score 1.
"""

from __future__ import annotations

import shlex

from swe.instances import read_instances
from test_swe_rollouts import Step, _run

# A stand-in for pytest that reports every node id on its command line as passed.
_FAKE_PYTEST = "import sys\nprint('\\n'.join('PASSED ' + a for a in sys.argv[1:] if '::' in a))\n"
# A pytest plugin (conftest or -p) that turns every test's outcome into a pass.
_PASS_ALL_PLUGIN = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
)
_USER_SITE = "$(python3 -c 'import site; print(site.getusersitepackages())')"


def _write(path: str, text: str) -> Step:
    return "bash", {"command": f"mkdir -p \"$(dirname {path})\" && printf %s {shlex.quote(text)} > {path} && echo ok"}


def _eval(project: str) -> dict:
    return next(row for row in read_instances("eval") if row["project"] == project)


def _assert_zero(outputs: list[dict]) -> None:
    assert [o["error"] for o in outputs] == [None] * len(outputs)
    assert [(o["reward"], o["metrics"]["fail_to_pass"]) for o in outputs] == [(0.0, 0.0)] * len(outputs)


async def test_a_pytest_module_in_the_repository_is_not_the_graders_pytest() -> None:
    _assert_zero(await _run([_eval("inflection")], [[_write("pytest.py", _FAKE_PYTEST)]]))


async def test_a_new_conftest_is_not_loaded_by_the_grader() -> None:
    toolz, inflection = _eval("toolz"), _eval("inflection")
    module_dir = toolz["FAIL_TO_PASS"][0].split("::")[0].rsplit("/", 1)[0]
    outputs = await _run([toolz, inflection], [[_write(f"{module_dir}/conftest.py", _PASS_ALL_PLUGIN)],
                                               [_write("conftest.py", _PASS_ALL_PLUGIN)]])
    _assert_zero(outputs)


async def test_pytest_settings_in_or_above_the_repository_are_not_the_graders() -> None:
    toolz, semver = _eval("toolz"), _eval("semver")
    plugin = _write("pass_all_plugin.py", _PASS_ALL_PLUGIN)
    outputs = await _run([toolz, semver], [
        [plugin, _write("pyproject.toml", '[tool.pytest.ini_options]\naddopts = "-p pass_all_plugin"\n')],
        [plugin, _write("/workspace/pytest.ini", "[pytest]\naddopts = -p pass_all_plugin\n")],
    ])
    _assert_zero(outputs)


async def test_site_customisation_and_pth_files_do_not_reach_the_grader() -> None:
    rows = [_eval("inflection"), _eval("semver"), _eval("toolz")]
    fake = _write("/tmp/fake/pytest.py", _FAKE_PYTEST)
    hook = "import sys; sys.path.insert(0, '/tmp/fake')\n"
    outputs = await _run(rows, [[fake, _write(f"{_USER_SITE}/usercustomize.py", hook)],
                                [fake, _write(f"{_USER_SITE}/sitecustomize.py", hook)],
                                [fake, _write(f"{_USER_SITE}/fake.pth", hook)]])
    _assert_zero(outputs)


async def test_fixes_elsewhere_in_the_package_and_in_new_helper_modules_score_one() -> None:
    first, second = [r for r in read_instances("eval") if r["file"] == "toolz/itertoolz.py"][:2]
    # the function repaired in a new module of the package: a copy of the buggy file with the fix applied
    def helper(row: dict) -> Step:
        return "bash", {"command": f"cp {row['file']} toolz/_repaired.py && "
                                   f"patch toolz/_repaired.py <<'PATCH'\n{row['fix_patch']}PATCH"}

    rebind = f"from toolz._repaired import {first['function']}  # noqa: E402\n"
    in_the_buggy_file = ("bash", {"command": f"printf %s {shlex.quote(rebind)} >> {first['file']}"})
    # the buggy file untouched: the package's __init__ rebinds the function from the helper
    name = second["function"]
    in_init = f"\nfrom toolz import _repaired, itertoolz\nitertoolz.{name} = _repaired.{name}\n"
    in_another_file = ("bash", {"command": f"printf %s {shlex.quote(in_init)} >> toolz/__init__.py"})
    outputs = await _run([first, second], [[helper(first), in_the_buggy_file], [helper(second), in_another_file]])
    assert [o["error"] for o in outputs] == [None, None]
    assert [o["reward"] for o in outputs] == [1.0, 1.0]
