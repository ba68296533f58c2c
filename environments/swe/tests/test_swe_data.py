"""The swe environment's data and set-up: instances, splits, mutations, arguments, and the validate command."""

from __future__ import annotations

import ast
import importlib.util
import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from swe import load_environment
from swe.environment import issue_text, resolve_repo_path
from swe.instances import REQUIRED, read_instances, repo_archive
from swe.testrun import failure_report, parse_outcomes, pytest_command

from verifiers.errors import UsageError

HERE = Path(__file__).resolve().parents[1]


def _build_module():
    spec = importlib.util.spec_from_file_location("swe_build_dataset", HERE / "build_dataset.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def _pristine(project: str, path: str) -> str:
    with tarfile.open(fileobj=io.BytesIO(repo_archive(project))) as tar:
        return tar.extractfile(path).read().decode()


def _patched(text: str, patch: str, tmp_path: Path, name: str) -> str:
    target = tmp_path / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    subprocess.run(["patch", "-p1", "--quiet", "-d", str(tmp_path)], input=patch, text=True, check=True)
    return target.read_text()


def test_instances_are_well_formed(tmp_path: Path) -> None:
    rows = read_instances()
    assert len(rows) >= 50
    assert len({r["instance_id"] for r in rows}) == len(rows)
    assert {r["project"] for r in rows} == {"inflection", "semver", "toolz"}
    for row in rows:
        assert set(REQUIRED) <= set(row)
        assert row["FAIL_TO_PASS"] and not set(row["FAIL_TO_PASS"]) & set(row["PASS_TO_PASS"])
        # PASS_TO_PASS stays within the modules of the failing tests
        modules = {t.split("::")[0] for t in row["FAIL_TO_PASS"]}
        assert {t.split("::")[0] for t in row["PASS_TO_PASS"]} <= modules
    for row in rows[::7]:  # the patches are each other's reverse on the shipped tree
        original = _pristine(row["project"], row["file"])
        buggy = _patched(original, row["bug_patch"], tmp_path / row["instance_id"], row["file"])
        assert buggy != original and ast.parse(buggy)
        assert _patched(buggy, row["fix_patch"], tmp_path / row["instance_id"], row["file"]) == original


def test_bugs_touch_only_library_code_so_the_images_test_files_are_pristine() -> None:
    for row in read_instances():
        touched = {line[len("+++ b/"):].split("\t")[0] for line in row["bug_patch"].splitlines()
                   if line.startswith("+++ ")}
        assert touched == {row["file"]}
        graded = {test_id.split("::")[0] for test_id in row["FAIL_TO_PASS"] + row["PASS_TO_PASS"]}
        assert row["file"] not in graded and not row["file"].endswith("conftest.py")


def test_a_mutated_function_is_never_in_both_splits() -> None:
    train, evaluation = read_instances("train"), read_instances("eval")
    assert train and evaluation and len(train) + len(evaluation) == len(read_instances())
    key = lambda r: (r["project"], r["file"], r["function"])  # noqa: E731
    assert not {key(r) for r in train} & {key(r) for r in evaluation}
    env = load_environment()
    assert len(env.get_dataset()) == len(train) and len(env.get_eval_dataset()) == len(evaluation)


def test_the_issue_names_the_failures_and_not_the_fix() -> None:
    for row in read_instances():
        text = issue_text(row)
        assert "/workspace/repo" in text and all(t in text for t in row["FAIL_TO_PASS"])
        assert row["fix_patch"] not in text and row["bug_patch"] not in text
    assert sum("Error" in r["failure_output"] for r in read_instances()) > len(read_instances()) / 2


def test_mutations_replace_only_the_expression() -> None:
    build = _build_module()
    source = "X = 1 < 2\n\n\ndef f(a, b):\n    # why\n    return a < b and not a  # keep\n"
    mutants = {m.kind: build.apply_mutation(source, m) for m in build.mutations(source)}
    assert "X = 1 < 2" in source and all(m.function == "f" for m in build.mutations(source))  # module level kept
    assert mutants["negated_comparison"] == source.replace("a < b", "(a >= b)")
    assert mutants["boundary_shift"] == source.replace("a < b", "(a <= b)")
    assert mutants["swapped_and_or"] == source.replace("a < b and not a", "(a < b or not a)")
    assert mutants["dropped_not"] == source.replace("not a", "a")
    assert build.split_of("p", "f.py", "f") == build.split_of("p", "f.py", "f")


def test_pytest_output_parsing() -> None:
    output = ("___ test_b[x] ___\n    def test_b(): ...\nE   assert 1 == 2\n=== short test summary info ===\n"
              "PASSED t.py::test_a[Some Title]\nFAILED t.py::test_b[x] - assert 1 == 2\nERROR u.py\n")
    assert parse_outcomes(output) == {"t.py::test_a[Some Title]": "PASSED", "t.py::test_b[x]": "FAILED",
                                      "u.py": "ERROR"}
    assert failure_report(output, ["t.py::test_b[x]"]).endswith("E   assert 1 == 2")
    assert pytest_command(["t.py::test_b[x y]"]).endswith("-- 't.py::test_b[x y]'")


def test_paths_outside_the_repository_are_refused() -> None:
    assert resolve_repo_path("semver/version.py") == "/workspace/repo/semver/version.py"
    assert resolve_repo_path("/workspace/repo/a/../b.py") == "/workspace/repo/b.py"
    assert resolve_repo_path("../x") is None and resolve_repo_path("/etc/passwd") is None
    assert resolve_repo_path(".") is None


@pytest.mark.parametrize("args", [{"num_eval_examples": 0}, {"num_train_examples": "3"}, {"max_turns": 0},
                                  {"timeout_per_command_seconds": -1}, {"timeout_per_test_run_seconds": True},
                                  {"system_prompt": 3}])
def test_bad_arguments_are_refused(args: dict) -> None:
    with pytest.raises(UsageError):
        load_environment(**args)


@pytest.mark.slow
def test_validate_applies_the_reference_fixes_in_sandboxes() -> None:
    done = subprocess.run([sys.executable, "-m", "swe", "validate", "--limit", "3"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("validated 3/3 in ")
    bad = subprocess.run([sys.executable, "-m", "swe", "validate", "--limit", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--limit must be a positive integer" in bad.stderr
