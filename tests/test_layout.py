"""The test tree has no ``__init__.py`` files, so pytest imports each test module by its basename
(rootdir import mode): two test modules with one basename stop the whole suite at collection."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_test_module_basenames_are_unique() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("*.py"):
        if "__pycache__" in path.parts or (path.parent / "__init__.py").exists():
            continue  # a package's modules are imported under their package name
        if path.name.startswith("test_") or path.name == "conftest.py":
            by_name[path.name].append(str(path.relative_to(TESTS)))
    clashes = {name: paths for name, paths in by_name.items() if len(paths) > 1 and name != "conftest.py"}
    assert not clashes, f"test modules sharing a basename (rename one): {clashes}"
