"""Build the swe environment's data: pristine project trees and validated bug instances (SWE-smith style).

Usage (from this directory, with pip able to reach PyPI)::

    python build_dataset.py            # downloads the pinned sdists with pip, writes swe/data/

Each project's sdist is unpacked and trimmed to its package, its tests and its licence (``swe/data/repos/
<project>.tar.gz``). Bugs are made by mutating the source with the stdlib ``ast`` module: a comparison
flipped or moved off by one, ``and``/``or`` swapped, a ``not`` dropped, an integer constant off by one,
``+``/``-`` swapped, a returned boolean flipped. Only the mutated expression's text is replaced (by
``ast.unparse`` of the mutated node), so the rest of the file keeps its formatting and comments.

Every kept instance is validated here with the interpreter the sandbox runs (``/usr/bin/python3``) and the
pytest the sandbox gets (see ``swe/pytest_bundle.py``): the pristine tree passes every listed test, the
mutant fails every FAIL_TO_PASS test and passes every PASS_TO_PASS test. PASS_TO_PASS is bounded to the
test modules that hold the failing tests, so one scoring run takes about a second.
"""

from __future__ import annotations

import argparse
import ast
import copy
import difflib
import gzip
import hashlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from swe.pytest_bundle import extract_to
from swe.testrun import failure_report, parse_outcomes, passed, pytest_command

HERE = Path(__file__).resolve().parent
DATA = HERE / "swe" / "data"
PYTHON = "/usr/bin/python3"
SEED = 11
EVAL_SHARE = 4  # one function in four (by hash) is evaluation-only


@dataclass(frozen=True)
class Project:
    name: str
    version: str
    licence: str
    licence_file: str
    copy: dict[str, str]  # sdist path -> path in the trimmed tree
    sources: dict[str, list[str]]  # mutated file -> the test modules that exercise it
    quota: int
    per_function: int = 2  # bugs per function at most, to spread them
    skip_tests: list[str] = field(default_factory=list)  # need installed metadata, absent in a plain tree

    @property
    def sdist(self) -> str:
        return f"{self.name}-{self.version}.tar.gz"


PROJECTS = [
    Project("inflection", "0.5.1", "MIT", "LICENSE",
            {"inflection": "inflection", "test_inflection.py": "test_inflection.py", "LICENSE": "LICENSE"},
            {"inflection/__init__.py": ["test_inflection.py"]}, quota=24, per_function=4),
    Project("semver", "3.1.2", "BSD-3-Clause", "LICENSE.txt",
            {"src/semver": "semver", "tests": "tests", "LICENSE.txt": "LICENSE.txt"},
            {"semver/version.py": ["tests/test_semver.py", "tests/test_compare.py", "tests/test_bump.py",
                                   "tests/test_parsing.py", "tests/test_match.py", "tests/test_format.py",
                                   "tests/test_max-min.py", "tests/test_replace.py", "tests/test_index.py",
                                   "tests/test_next_version_legacy_order.py"],
             "semver/_deprecated.py": ["tests/test_deprecated_functions.py"]}, quota=32),
    Project("toolz", "1.2.0", "BSD-3-Clause", "LICENSE.txt",
            {"toolz": "toolz", "tlz": "tlz", "LICENSE.txt": "LICENSE.txt"},
            {"toolz/itertoolz.py": ["toolz/tests/test_itertoolz.py"],
             "toolz/functoolz.py": ["toolz/tests/test_functoolz.py"],
             "toolz/dicttoolz.py": ["toolz/tests/test_dicttoolz.py"],
             "toolz/recipes.py": ["toolz/tests/test_recipes.py"]}, quota=32,
            skip_tests=["toolz/tests/test_package.py"]),
]


# -- mutations ------------------------------------------------------------------------------------

_NEGATED: dict[type, type] = {ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.Eq: ast.NotEq,
                              ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
                              ast.IsNot: ast.Is}
_BOUNDARY: dict[type, type] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}


@dataclass(frozen=True)
class Mutation:
    function: str  # qualified name of the function the mutated node is in
    kind: str
    node: ast.AST  # the original node (its position is the span replaced)
    replacement: ast.AST


def _variants(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """Every mutated copy of ``node`` this builder makes, with the mutation's kind."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        for kind, table in (("negated_comparison", _NEGATED), ("boundary_shift", _BOUNDARY)):
            if type(node.ops[0]) in table:
                new = copy.deepcopy(node)
                new.ops = [table[type(node.ops[0])]()]
                yield kind, new
    elif isinstance(node, ast.BoolOp):
        new = copy.deepcopy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield "swapped_and_or", new
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "dropped_not", copy.deepcopy(node.operand)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        new = copy.deepcopy(node)
        new.op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
        yield "swapped_plus_minus", new
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        yield "off_by_one", ast.Constant(node.value + 1)
        if node.value > 0:
            yield "off_by_one", ast.Constant(node.value - 1)
    elif isinstance(node, ast.Return) and isinstance(node.value, ast.Constant) and type(node.value.value) is bool:
        yield "flipped_return", ast.Return(ast.Constant(not node.value.value))


class _Collector(ast.NodeVisitor):
    """Mutation sites inside function bodies, each with its innermost function's qualified name."""

    def __init__(self) -> None:
        self.scope: list[str] = []
        self.functions: list[str] = []
        self.mutations: list[Mutation] = []

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.scope.append(node.name)
        for statement in node.body:
            self.visit(statement)
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scope.append(node.name)
        self.functions.append(".".join(self.scope))
        for statement in node.body:
            self.visit(statement)
        self.functions.pop()
        self.scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def generic_visit(self, node: ast.AST) -> None:
        if self.functions:
            for kind, replacement in _variants(node):
                self.mutations.append(Mutation(self.functions[-1], kind, node, replacement))
        super().generic_visit(node)


def mutations(source: str) -> list[Mutation]:
    collector = _Collector()
    collector.visit(ast.parse(source))
    return collector.mutations


def apply_mutation(source: str, mutation: Mutation) -> str | None:
    """The source with the node's text replaced by the unparsed replacement; None when that changes nothing."""
    node = mutation.node
    lines = source.splitlines(keepends=True)
    data = [line.encode() for line in lines]  # ast column offsets count UTF-8 bytes
    start = sum(len(b) for b in data[:node.lineno - 1]) + node.col_offset
    end = sum(len(b) for b in data[:node.end_lineno - 1]) + node.end_col_offset
    text = ast.unparse(mutation.replacement)
    if isinstance(mutation.replacement, (ast.BoolOp, ast.Compare, ast.BinOp, ast.UnaryOp)):
        text = f"({text})"  # keeps its meaning whatever operator surrounds the span
    whole = source.encode()
    mutated = (whole[:start] + text.encode() + whole[end:]).decode()
    try:
        changed = ast.dump(ast.parse(mutated)) != ast.dump(ast.parse(source))
    except SyntaxError:
        return None
    return mutated if changed else None


def unified_patch(path: str, before: str, after: str) -> str:
    """A ``patch -p1`` diff turning ``before`` into ``after`` for the file at ``path``."""
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}"))


def split_of(project: str, path: str, function: str) -> str:
    """``eval`` or ``train``, fixed by the mutated function so one function's bugs never span both."""
    digest = hashlib.sha256(f"{project}:{path}:{function}".encode()).digest()
    return "eval" if digest[0] % EVAL_SHARE == 0 else "train"


# -- trees and test runs --------------------------------------------------------------------------

def _ignore(directory: str, names: list[str]) -> list[str]:
    return [n for n in names if n == "__pycache__" or n.endswith((".pyc", ".egg-info"))]


def stage_tree(sdist_root: Path, project: Project, tree: Path) -> None:
    for source, target in project.copy.items():
        origin, destination = sdist_root / source, tree / target
        if origin.is_dir():
            shutil.copytree(origin, destination, ignore=_ignore)
        else:
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, destination)
    for skipped in project.skip_tests:
        (tree / skipped).unlink()


def tree_archive(tree: Path) -> bytes:
    """A reproducible gzipped tar of ``tree`` (sorted names, zero times and owners)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as zipped, tarfile.open(fileobj=zipped, mode="w") as tar:
        for path in sorted(tree.rglob("*")):
            if "__pycache__" in path.parts:
                continue
            info = tar.gettarinfo(path, arcname=path.relative_to(tree).as_posix())
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if path.is_file():
                with path.open("rb") as handle:
                    tar.addfile(info, handle)
            else:
                tar.addfile(info)
    return buffer.getvalue()


def run_tests(tree: Path, tests: list[str], pytest_dir: Path, timeout: float = 60) -> tuple[dict[str, str], str]:
    """Outcomes per node id and pytest's output, run as the sandbox runs them."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(pytest_dir), "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}
    done = subprocess.run(pytest_command(tests, PYTHON), shell=True, cwd=tree, env=env, capture_output=True,
                          text=True, timeout=timeout)
    return parse_outcomes(done.stdout), done.stdout


def _module_of(test_id: str) -> str:
    return test_id.split("::", 1)[0]


def _plain(test_id: str) -> bool:
    """Ids that survive a shell, pytest's id parsing and the summary line's " - " separator unchanged."""
    return test_id.isascii() and test_id.isprintable() and " - " not in test_id


def _holds(tree: Path, path: str, mutated: str, fail_to_pass: list[str], pass_to_pass: list[str],
           pytest_dir: Path) -> bool:
    """The final check, by the listed ids as grading runs them: all pass on the pristine tree; on the mutant
    every FAIL_TO_PASS test fails and every PASS_TO_PASS test passes."""
    listed = fail_to_pass + pass_to_pass
    pristine, _ = run_tests(tree, listed, pytest_dir)
    original = (tree / path).read_text()
    (tree / path).write_text(mutated)
    try:
        buggy, _ = run_tests(tree, listed, pytest_dir)
    finally:
        (tree / path).write_text(original)
    return all(passed(pristine, listed)) and not any(passed(buggy, fail_to_pass)) and all(passed(buggy, pass_to_pass))


def build_project(project: Project, sdist_dir: Path, pytest_dir: Path, work: Path) -> list[dict]:
    with tarfile.open(sdist_dir / project.sdist) as tar:
        tar.extractall(work, filter="data")
    tree = work / f"{project.name}-tree"
    stage_tree(work / f"{project.name}-{project.version}", project, tree)
    (DATA / "repos").mkdir(parents=True, exist_ok=True)
    (DATA / "repos" / f"{project.name}.tar.gz").write_bytes(tree_archive(tree))
    all_tests = sorted({t for tests in project.sources.values() for t in tests})
    baseline, _ = run_tests(tree, all_tests, pytest_dir)
    green = {t for t, outcome in baseline.items() if outcome == "PASSED" and _plain(t)}
    print(f"{project.name}: {len(green)} tests pass on the pristine tree", flush=True)

    rng = random.Random(f"{SEED}:{project.name}")
    candidates = [(path, m) for path in project.sources for m in mutations((tree / path).read_text())]
    rng.shuffle(candidates)
    instances: list[dict] = []
    per_function: dict[str, int] = {}
    tried = 0
    for path, mutation in candidates:
        if len(instances) >= project.quota:
            break
        key = f"{path}:{mutation.function}"
        if per_function.get(key, 0) >= project.per_function:
            continue
        original = (tree / path).read_text()
        mutated = apply_mutation(original, mutation)
        if mutated is None:
            continue
        tried += 1
        tests = project.sources[path]
        (tree / path).write_text(mutated)
        try:
            outcomes, output = run_tests(tree, tests, pytest_dir)
        except subprocess.TimeoutExpired:
            continue  # a mutant that hangs makes a slow, unfair instance
        finally:
            (tree / path).write_text(original)
        in_scope = sorted(t for t in green if _module_of(t) in tests)
        fail_to_pass = [t for t in in_scope if outcomes.get(t) != "PASSED"]
        if not fail_to_pass or len(fail_to_pass) > 40:
            continue  # no test sees it (an equivalent mutant), or it breaks the whole module
        modules = {_module_of(t) for t in fail_to_pass}
        pass_to_pass = [t for t in in_scope if _module_of(t) in modules and t not in fail_to_pass]
        if not all(passed(outcomes, pass_to_pass)) or not _holds(tree, path, mutated, fail_to_pass, pass_to_pass,
                                                                   pytest_dir):
            continue
        per_function[key] = per_function.get(key, 0) + 1
        instances.append({
            "instance_id": f"{project.name}__{mutation.function}__{len(instances):03d}",
            "project": project.name, "version": project.version, "file": path,
            "function": mutation.function, "mutation": mutation.kind,
            "split": split_of(project.name, path, mutation.function),
            "bug_patch": unified_patch(path, original, mutated),
            "fix_patch": unified_patch(path, mutated, original),
            "FAIL_TO_PASS": fail_to_pass, "PASS_TO_PASS": pass_to_pass,
            "failure_output": failure_report(output, fail_to_pass),
        })
    print(f"{project.name}: {len(instances)} instances from {tried} mutants tried", flush=True)
    return instances


def download(sdist_dir: Path) -> None:
    specs = [f"{p.name}=={p.version}" for p in PROJECTS]
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d",
                    str(sdist_dir), *specs], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sdists", type=Path, help="a directory that already holds the pinned sdists")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        sdist_dir = args.sdists or work / "sdists"
        if args.sdists is None:
            download(sdist_dir)
        pytest_dir = extract_to(work / "pytest")
        instances = [row for project in PROJECTS for row in build_project(project, sdist_dir, pytest_dir, work)]
    lines = "".join(json.dumps(row, sort_keys=True) + "\n" for row in instances)
    with gzip.GzipFile(DATA / "instances.jsonl.gz", mode="wb", mtime=0) as out:
        out.write(lines.encode())
    splits = {s: sum(r["split"] == s for r in instances) for s in ("train", "eval")}
    print(f"wrote {len(instances)} instances ({splits}) to {DATA}", flush=True)


if __name__ == "__main__":
    os.chdir(HERE)
    main()
